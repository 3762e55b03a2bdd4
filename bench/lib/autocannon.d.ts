/** autocannon ships no types; the benches read the fields of its result they print (load.ts). */
declare module "autocannon";

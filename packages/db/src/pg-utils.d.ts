/** The part of node-postgres's utilities the PGlite statements use (pglite-statements.ts); the package ships no types for it. */
declare module "pg/lib/utils.js" {
  /** A parameter as the `pg` driver sends it: text, bytes, or null. */
  export function prepareValue(value: unknown): string | Buffer | null;
}

/**
 * The server's router type, which types every call. In the workspace it is read from
 * `@platform/core`; the packed package ships a standalone declaration of it instead,
 * generated from this one by `scripts/build.ts` (no server code or types shipped).
 */
export type { AppRouter } from "@platform/core";

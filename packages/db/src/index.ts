export * from "./connection.ts";
export { migrateToLatest } from "./migrator.ts";
export * from "./schema.ts";

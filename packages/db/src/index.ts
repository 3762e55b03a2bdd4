export { type Checkpointed, type CheckpointLimits, checkpointIfDue, checkpointLimits } from "./checkpoint.ts";
export * from "./connection.ts";
export { migrateToLatest } from "./migrator.ts";
export {
  addRunPartitions,
  dropRunPartitionsBefore,
  firstIdAt,
  firstIdOfDay,
  idTime,
  type RunPartition,
  runPartitions,
} from "./run-partitions.ts";
export * from "./schema.ts";
export * from "./stored-shapes.ts";
export { type VacuumedTable, vacuumTablesDue } from "./vacuum.ts";

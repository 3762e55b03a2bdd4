/** Helpers for tests outside core (`@platform/core/testing`); never imported by the platform itself. */
export { totpCodeFromUrl } from "./accounts/testing.ts";
export { scopeSlot } from "./broker/redis/data-holder.ts";
export {
  type LocalRedisCluster,
  redisClusterMissing,
  sharedLocalRedisCluster,
  startLocalRedisCluster,
} from "./broker/redis/local-cluster.ts";
export { eventually } from "./broker/test-backends.ts";
export { createRunQueue, partitionScope } from "./engine/run-queue.ts";

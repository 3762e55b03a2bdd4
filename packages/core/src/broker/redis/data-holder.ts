/// <reference path="../../types/cluster-key-slot.d.ts" />
import calculateSlot from "cluster-key-slot";
import { Cluster, type Redis } from "ioredis";
import { DomainError } from "../../errors.ts";
import { assertName } from "../arguments.ts";
import { guarded, type RedisClient } from "./client.ts";
import { scopeTag } from "./keys.ts";

/**
 * The replication id of the primary that serves a scope's keys (see `Broker.dataHolder`).
 * Redis draws a new one when it starts without its data and when a replica is promoted,
 * which is exactly when keys written before may be missing.
 */
export async function dataHolder(client: RedisClient, scope: string): Promise<string> {
  assertName("scope", scope);
  if (client instanceof Cluster) {
    // A read of the scope's slot first: after a failover it finds the new primary (MOVED, or
    // a closed connection) and updates the client's slot map before the map is asked.
    await guarded(() => client.exists(scopeTag(scope)));
  }
  const node = client instanceof Cluster ? primaryServing(client, scopeSlot(scope)) : client;
  const info = await guarded(() => node.info("replication"));
  const id = /^master_replid:(\w+)/m.exec(info)?.[1];
  if (!id) throw new Error("INFO replication named no master_replid");
  return id;
}

/** The cluster slot every key of a scope is in. */
export const scopeSlot = (scope: string) => calculateSlot(scopeTag(scope));

/** The connection to the primary of `slot`, as the client's slot map (refreshed on MOVED and failover) has it. */
function primaryServing(cluster: Cluster, slot: number): Redis {
  const address = cluster.slots[slot]?.[0];
  const node = cluster
    .nodes("all")
    .find((candidate) => `${candidate.options.host}:${candidate.options.port}` === address);
  if (!node) throw new DomainError("unavailable", "the broker (Redis) is unavailable");
  return node;
}

import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import { STEP_OPTION_DEFAULTS } from "../flows/step-defaults.ts";
import { inspectPayload } from "../templates/index.ts";
import type { RevisionStep } from "./records.ts";

/** A revision's steps as the executor runs them. */
export interface LoadedStep extends RevisionStep {
  /** Keys of the secrets the payload names, read before each attempt. */
  secretKeys: string[];
}

export interface RevisionCache {
  /** The steps of a flow revision, or null when it does not exist. */
  steps(flowId: string, revision: number): Promise<LoadedStep[] | null>;
}

/**
 * Flow revisions are immutable, so each process keeps the ones it ran (the most recent
 * `maxEntries`) and reads each from the database once.
 */
export function createRevisionCache(db: Kysely<Database>, maxEntries = 1000): RevisionCache {
  const cache = new Map<string, Promise<LoadedStep[] | null>>();

  async function load(flowId: string, revision: number): Promise<LoadedStep[] | null> {
    const row = await db
      .selectFrom("flow_revisions")
      .select("steps")
      .where("flow_id", "=", flowId)
      .where("revision", "=", revision)
      .executeTakeFirst();
    if (!row) return null;
    return (row.steps as unknown as RevisionStep[]).map((step) => ({
      name: step.name,
      subject: step.subject,
      payload: step.payload,
      options: { ...STEP_OPTION_DEFAULTS, ...step.options },
      secretKeys: [
        ...new Set(
          inspectPayload(step.payload)
            .references.filter(({ reference }) => reference.root === "secrets")
            .map(({ reference }) => reference.path[0] as string),
        ),
      ],
    }));
  }

  return {
    steps(flowId, revision) {
      const key = `${flowId}:${revision}`;
      const cached = cache.get(key);
      if (cached !== undefined) return cached;
      const loading = load(flowId, revision);
      cache.set(key, loading);
      // A failed read is not kept; a missing revision is (it cannot appear later).
      loading.catch(() => cache.delete(key));
      if (cache.size > maxEntries) {
        const oldest = cache.keys().next().value;
        if (oldest !== undefined) cache.delete(oldest);
      }
      return loading;
    },
  };
}

import { sql } from "kysely";
import type { CompiledPayload } from "../templates/index.ts";
import { passOnSlots } from "./concurrency.ts";
import {
  admitOrSkip,
  type ControlDeps,
  cancelRuns,
  type Decision,
  judgeStartsTogether,
  tellEnded,
} from "./run-ends.ts";
import type { ClaimedRun } from "./store.ts";

/**
 * Per-flow singletons (`singleton: {key?, mode}`): at most one run of a key is queued or
 * running. A start is judged once, the first time a worker takes it: with no run of its key
 * queued or running it is admitted and keeps its key (`singleton_key`, under a partial index
 * of the runs that keep one, which a run lets go of as it ends; the lookup reads `status` too); otherwise, in `skip` mode, it
 * ends `skipped` with the reason, and in `cancel` mode it is admitted and the key's run ends
 * `cancelled`, stopped as `POST /runs/{id}/cancel` stops one (`cancelRuns`), its
 * `end_reason` and `taken_by` naming the start that replaced it. The decisions of a key are
 * made one at a time (a transaction-scoped advisory lock), so a key has one run across every
 * worker process; a later delivery of an admitted run is admitted again.
 */

const ofKey = (key: string | null) => (key === null ? "" : ` of key ${JSON.stringify(key)}`);

/**
 * Singleton decisions for one process: `take` answers true when a claimed run goes on under
 * its flow's singleton (`key`: its key's value); false when it was skipped here (whoever
 * waits on it told) or is no longer this delivery's. Starts in `skip` mode that the process
 * takes together are judged in one statement (`singleton_judge`, a group commit); a start in
 * `cancel` mode in a transaction of its own, which stops the key's live runs.
 */
export function createSingletons(deps: ControlDeps): {
  take(
    run: Pick<ClaimedRun, "id" | "flowId" | "holder">,
    singleton: { mode: "skip" | "cancel"; key: CompiledPayload | null },
    key: string,
  ): Promise<boolean>;
} {
  const judge = judgeStartsTogether(
    deps,
    "singleton_key",
    (starts) => sql`select id, holder, key, admit, reason from singleton_judge(${starts}::jsonb)`,
  );

  /** Admits the start and ends the key's other live runs, replaced by it. */
  async function replaceLive(
    run: Pick<ClaimedRun, "id" | "flowId" | "holder">,
    key: string,
    shown: string | null,
  ): Promise<boolean> {
    const othersLive = sql<boolean>`
      o.flow_id = ${run.flowId} and o.singleton_key = ${key} and o.status in ('queued', 'running') and o.id <> ${run.id}`;
    const decided = await deps.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext(${`singleton/${run.flowId}/${key}`}))`.execute(trx);
      const judgement = sql<Decision>`
        select ${run.id}::uuid as id, ${run.holder}::text as holder, ${key}::text as key, true as admit,
          null::text as reason`;
      if (!(await admitOrSkip(trx, "singleton_key", [run.id], judgement)).has(run.id)) return null;
      return cancelRuns(trx, sql`id in (select o.id from runs as o where ${othersLive})`, {
        text: `replaced by run ${run.id}, a later start${ofKey(shown)} (singleton)`,
        takenBy: run.id,
      });
    });
    if (!decided) return false;
    await passOnSlots(deps, decided);
    await tellEnded(deps, decided, () => "cancelled");
    return true;
  }

  return {
    async take(run, singleton, key) {
      const shown = singleton.key === null ? null : key;
      if (singleton.mode === "cancel") return replaceLive(run, key, shown);
      // A skipped start's reason, after the run in its way.
      return judge(run, key, { reason_after: `${ofKey(shown)} is queued or running` });
    },
  };
}

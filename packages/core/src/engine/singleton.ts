import { sql } from "kysely";
import type { CompiledPayload } from "../templates/index.ts";
import { passOnSlots } from "./concurrency.ts";
import { admitOrSkip, type CancelledRun, type ControlDeps, cancelRuns, tellEnded } from "./run-ends.ts";
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
 * Takes a claimed run under its flow's singleton (`key`: its key's value): true when it goes
 * on; false when it was skipped here (whoever waits on it told) or is no longer this
 * delivery's.
 */
export async function takeSingleton(
  deps: ControlDeps,
  run: ClaimedRun,
  singleton: { mode: "skip" | "cancel"; key: CompiledPayload | null },
  key: string,
): Promise<boolean> {
  const shown = singleton.key === null ? null : key;
  const othersLive = sql<boolean>`
    o.flow_id = ${run.flowId} and o.singleton_key = ${key} and o.status in ('queued', 'running') and o.id <> ${run.id}`;
  const decided = await deps.db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${`singleton/${run.flowId}/${key}`}))`.execute(trx);
    const live = await trx.selectFrom("runs as o").select("o.id").where(othersLive).limit(1).executeTakeFirst();
    const judge = async (admit: boolean, reason: string) => {
      const judgement = sql<{ id: string; holder: string; key: string; admit: boolean; reason: string }>`
        select ${run.id}::uuid as id, ${run.holder}::text as holder, ${key}::text as key, ${admit}::boolean as admit,
          ${reason}::text as reason`;
      return (await admitOrSkip(trx, "singleton_key", [run.id], judgement)).get(run.id) ?? null;
    };
    if (singleton.mode === "skip" || !live) {
      const reason = `singleton: run ${live?.id}${ofKey(shown)} is queued or running`;
      const judged = await judge(live === undefined, reason);
      return judged && { ...judged, reason, replaced: [] as CancelledRun[] };
    }
    const admitted = await judge(true, "");
    if (!admitted) return null;
    const replaced = await cancelRuns(trx, sql`id in (select o.id from runs as o where ${othersLive})`, {
      text: `replaced by run ${run.id}, a later start${ofKey(shown)} (singleton)`,
      takenBy: run.id,
    });
    return { admitted: true as const, reason: "", replaced };
  });
  if (!decided) return false;
  await passOnSlots(deps, decided.replaced);
  await tellEnded(deps, decided.replaced, () => "cancelled");
  if (!decided.admitted) await tellEnded(deps, [decided.skipped], () => `skipped: ${decided.reason}`);
  return decided.admitted;
}

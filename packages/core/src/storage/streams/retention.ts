import type { PeriodicJob } from "../../worker/periodic.ts";
import type { StorageDeps } from "../deps.ts";

const PAGE = 500;

/**
 * Trims every stream that has an age limit. Reads never return expired messages anyway,
 * and each publish trims its own stream; this frees what streams nobody writes to any
 * more still hold.
 */
export function streamRetentionJob(deps: StorageDeps, everyMs = 60_000): PeriodicJob {
  return {
    name: "storage-stream-retention",
    everyMs,
    async run({ signal }) {
      let after: { account_id: string; name: string } | undefined;
      while (!signal.aborted) {
        let query = deps.db
          .selectFrom("storage_streams")
          .select(["account_id", "name", "id", "max_age_s"])
          .where("max_age_s", "is not", null);
        if (after) {
          const { account_id, name } = after;
          query = query.where((eb) => eb(eb.refTuple("account_id", "name"), ">", eb.tuple(account_id, name)));
        }
        const streams = await query.orderBy("account_id").orderBy("name").limit(PAGE).execute();
        for (const stream of streams) {
          await deps.broker.trim(stream.account_id, stream.id, { maxAgeMs: (stream.max_age_s ?? 0) * 1000 });
        }
        const last = streams.at(-1);
        if (!last || streams.length < PAGE) return;
        after = last;
      }
    },
  };
}

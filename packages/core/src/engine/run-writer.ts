import type { StepRecord } from "./records.ts";
import type { ClaimedRun, RunStore, RunWrite } from "./store.ts";

/** The worker lost the run to another delivery (it stopped answering for a while): stop here. */
export class RunTakenOver extends Error {
  override name = "RunTakenOver";
}

/**
 * The first write of a run taken from its queueing entry found it claimed by another
 * delivery, or ended: nothing this delivery did was recorded, and it has nothing to do.
 */
export class RunClaimedElsewhere extends RunTakenOver {
  override name = "RunClaimedElsewhere";
}

export type WriteChange = Omit<RunWrite, "id" | "holder" | "steps" | "claim" | "recordedBytes">;

export interface RunWriter {
  /** The step's record changed: the next write carries it. */
  touch(key: string, record: StepRecord): void;
  /** Writes the records changed since the last write, if any, the run still running. */
  checkpoint(): Promise<void>;
  /** Writes a park or an end, with every changed record. */
  write(change: WriteChange): Promise<void>;
}

/**
 * A run's writes, one at a time in the order asked: steps running at once (for-each items,
 * parallel branches) share the run's row, and two writes of one run in one statement would
 * race. Each write carries the records changed since the one before (a record is written with
 * its output once it has succeeded, see `RunWrite`); a checkpoint with nothing changed writes
 * nothing. A run not claimed yet is claimed by its first write; `onClaimed` hears when that
 * write claimed a run that stays held. A write that finds the run no longer its own rejects,
 * and so does every write after it. Each write carries what the run has recorded by then
 * (`recordedBytes`, see record-budget.ts).
 */
export function createRunWriter(
  store: RunStore,
  run: ClaimedRun,
  onClaimed: ((claimedAt: number) => void) | undefined,
  recordedBytes: () => number,
): RunWriter {
  const pending = new Map<string, StepRecord>();
  let claim = run.claimed ? undefined : { startedAt: new Date() };
  let queue: Promise<void> = Promise.resolve();

  const send = async (change: WriteChange) => {
    const claiming = claim;
    const steps = [...pending].map(([name, record]) => ({ name, record }));
    pending.clear();
    const write = {
      id: run.id,
      holder: run.holder,
      steps,
      ...change,
      claim: claiming,
      recordedBytes: recordedBytes(),
      slot: run.slot,
    };
    if (!(await store.write(write))) {
      throw claiming
        ? new RunClaimedElsewhere(`run ${run.id} was claimed by another delivery`)
        : new RunTakenOver(`run ${run.id} was taken over by another delivery`);
    }
    claim = undefined;
    if (claiming && !change.release) onClaimed?.(claiming.startedAt.getTime());
  };

  const enqueue = (write: () => Promise<void>) => {
    const next = queue.then(write);
    queue = next;
    return next;
  };

  return {
    touch(key, record) {
      pending.set(key, record);
    },
    checkpoint() {
      return enqueue(async () => {
        if (pending.size > 0) await send({ status: "running", release: false, finished: false });
      });
    },
    write(change) {
      return enqueue(() => send(change));
    },
  };
}

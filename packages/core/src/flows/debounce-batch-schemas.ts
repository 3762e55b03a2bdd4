import type { BatchSettings, DebounceSettings } from "@platform/db";
import { z } from "zod";
import type { Same } from "../same-shape.ts";
import { templateField } from "./step-schemas.ts";

/**
 * A flow's `debounce` and `batch` settings (issue 31), as clients write and read them: how
 * bursts of starts of one key collapse into one run (the last start's data) or gather into
 * one (the list of every start's data). Applied when a worker first takes a run (see
 * engine/debounce.ts and engine/batch.ts), in the order docs/guide/flows.md gives.
 */

/** The longest a debounce waits or a batch stays open: a day. */
export const MAX_GATHER_S = 86_400;
/** The most starts one batch run takes. */
export const MAX_BATCH_ITEMS = 1000;

const seconds = (least: number) =>
  z
    .number()
    .int({ error: "must be a whole number" })
    .min(least, { error: `must be at least ${least}` })
    .max(MAX_GATHER_S, { error: `must be at most ${MAX_GATHER_S}` });

export const debounceInput = z
  .strictObject({
    period_s: seconds(1).meta({
      description:
        "The quiet a start waits for, in seconds (1 to 86400): another start of its key within it replaces it.",
    }),
    timeout_s: seconds(1).optional().meta({
      description:
        "The longest a stream of starts postpones a run, in seconds from the first start it replaced (period_s to 86400); absent, a stream with no quiet postpones it for as long as it lasts.",
    }),
    key: templateField(
      "Starts with the same value of this template share the debounce (`{{trigger.body.customer_id}}`); absent, all the flow's starts do.",
    ).optional(),
  })
  .refine((value) => value.timeout_s === undefined || value.timeout_s >= value.period_s, {
    error: "must be at least period_s",
    path: ["timeout_s"],
  })
  .nullish()
  .transform((value) => value ?? null)
  .meta({
    description:
      "A start waits `period_s` seconds of quiet before it runs; a later start of the same `key` within that time replaces it and the wait begins again, so a burst runs once, with its last start's data. The replaced runs end `skipped` (`end_reason`, and `taken_by`: the run that ran in their place). `timeout_s` bounds how long a continuous stream postpones the run (measured from the first start it replaced). The waiting run is `queued` (`queue_reason`: `waiting for debounce period`); each run's clock is its acceptance time, across every worker.",
  });

export const batchInput = z
  .strictObject({
    max_items: z
      .number()
      .int({ error: "must be a whole number" })
      .min(2, { error: "must be at least 2" })
      .max(MAX_BATCH_ITEMS, { error: `must be at most ${MAX_BATCH_ITEMS}` })
      .meta({ description: "A batch runs once it holds this many starts (2 to 1000)." }),
    timeout_s: seconds(1).meta({
      description: "A batch runs at the latest this many seconds after its first start was accepted (1 to 86400).",
    }),
    key: templateField(
      "Starts with the same value of this template share a batch (`{{trigger.body.customer_id}}`); absent, all the flow's starts do.",
    ).optional(),
  })
  .nullish()
  .transform((value) => value ?? null)
  .meta({
    description:
      "Starts of the same `key` gather into one run, which runs once `max_items` starts arrived or `timeout_s` seconds passed since the first, with the list of their trigger data in the order they were accepted as its trigger (`{{trigger[0]}}`). Every start is still answered its own run id at once: the first one's run holds the batch (`queue_reason`: `collecting a batch`) and runs it; the others end `batched`, `taken_by` naming it. A batch whose list would pass TRIGGER_MAX_BYTES runs without the start that would have passed it, which opens the next batch.",
  });

export const debounceOutput = z
  .object({ period_s: z.number().int(), timeout_s: z.number().int().optional(), key: z.string().optional() })
  .nullable()
  .meta({ description: "How its starts wait for quiet (per key); null: no debounce." });

export const batchOutput = z
  .object({ max_items: z.number().int(), timeout_s: z.number().int(), key: z.string().optional() })
  .nullable()
  .meta({ description: "How its starts gather into batch runs (per key); null: no batching." });

/** The settings are answered as they are stored. */
const _settingsAreStored: [
  Same<z.output<typeof debounceOutput>, DebounceSettings | null>,
  Same<z.output<typeof batchOutput>, BatchSettings | null>,
  Same<z.output<typeof debounceInput>, DebounceSettings | null>,
  Same<z.output<typeof batchInput>, BatchSettings | null>,
] = [true, true, true, true];

import { z } from "zod";
import { unsafeTextReason } from "../input-guard.ts";

/**
 * An event's key, as `POST /events`, `event.send` and `wait.event` take it. A key a step's
 * template makes is checked here too, not only where requests enter: a NUL character or a
 * lone surrogate cannot be stored with the run that waits on it.
 */
export const eventKey = z
  .string()
  .min(1, { error: "must not be empty" })
  .max(200, { error: "must be at most 200 characters" })
  .superRefine((key, context) => {
    const reason = unsafeTextReason(key);
    if (reason) context.addIssue({ code: "custom", message: reason });
  })
  .meta({ description: "Events are delivered by key within the account (1-200 characters): `approval-{{run.id}}`." });

import { z } from "zod";

/** An event's key, as `POST /events`, `event.send` and `wait.event` take it. */
export const eventKey = z
  .string()
  .min(1, { error: "must not be empty" })
  .max(200, { error: "must be at most 200 characters" })
  .meta({ description: "Events are delivered by key within the account (1-200 characters): `approval-{{run.id}}`." });

import { z } from "zod";
import { bodyInteger } from "../../schemas.ts";
import { MAX_DURATION_S } from "../limits.ts";
import { namePathParam } from "../names.ts";
import { MAX_READ_LIMIT } from "./messages.ts";
import { filterProblem, MAX_SUBJECT_LENGTH, SUBJECT_RULE, subjectProblem } from "./subjects.ts";

const streamName = namePathParam("Name of the stream:");

const MAX_MESSAGES = 1_000_000_000;

export const putStreamInput = z.object({
  name: streamName,
  description: z.string().max(1024).default("").meta({ description: "Up to 1,024 characters." }),
  max_messages: bodyInteger(1, MAX_MESSAGES)
    .nullable()
    .default(null)
    .meta({ description: `Keep at most this many newest messages (1–${MAX_MESSAGES}); absent or null: no limit.` }),
  max_age_s: bodyInteger(1, MAX_DURATION_S)
    .nullable()
    .default(null)
    .meta({
      description: `Drop messages older than this many seconds (1–${MAX_DURATION_S}, ten years); absent or null: no limit.`,
    }),
});

/** A text field checked by one of the subject rules, bounded before the rule runs. */
const checkedSubject = (problem: (value: string) => string | undefined) =>
  z
    .string()
    .max(MAX_SUBJECT_LENGTH)
    .check((ctx) => {
      const found = problem(ctx.value);
      if (found) ctx.issues.push({ code: "custom", message: found, input: ctx.value });
    });

export const publishInput = z.object({
  name: streamName,
  stream: z.string().max(64).meta({ description: "The stream's name again; must equal the one in the path." }),
  subject: checkedSubject(subjectProblem).meta({ description: `The message's subject: ${SUBJECT_RULE}.` }),
  body: z.record(z.string(), z.unknown()).meta({ description: "Any JSON object, up to 1 MiB as JSON." }),
});

export const readMessagesInput = z.object({
  name: streamName,
  // Query parameters: the generator drops what is set on `.optional()`, so `.meta()` goes first.
  after: z.coerce
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .meta({
      description: "Only messages with a greater `seq` (a previous page's `next`); default: from the oldest kept.",
    })
    .optional(),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_READ_LIMIT)
    .default(100)
    .meta({ description: `Most messages in the page (1–${MAX_READ_LIMIT}, default 100).` }),
  subject: checkedSubject(filterProblem)
    .meta({
      description:
        "Only messages whose subject matches this filter: `*` stands for one token, a last `>` for one or more (`orders.*.created`, `orders.>`).",
    })
    .optional(),
});

export const streamMessage = z
  .object({
    seq: z.number().int().meta({ description: "The message's number in its stream: 1, 2, 3, ..." }),
    subject: z.string(),
    body: z.record(z.string(), z.unknown()),
    ts: z.number().int().meta({ description: "When it was published, in Unix milliseconds." }),
  })
  .meta({ id: "StreamMessage" });

export const messagesPage = z.object({
  data: z.array(streamMessage),
  next: z
    .number()
    .int()
    .nullable()
    .meta({ description: "Pass as `after` for the next page; null when the stream held nothing more." }),
});

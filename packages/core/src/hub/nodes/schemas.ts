import { z } from "zod";
import { BUILT_IN_SUBJECTS } from "../../built-in-functions.ts";
import { respondPayloadProblems } from "../../runs/tenant-answers.ts";
import { pathParam } from "../../schemas.ts";
import { inspectPayload } from "../../templates/index.ts";

/** Collections are subjects: dot-separated tokens of letters, digits, `_` and `-`, 128 characters at most. */
const NODE_COLLECTION = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const collectionRule = "1-128 characters: tokens of letters, digits, _ or - joined by dots";

/** Retry options a node gets when it leaves them out. */
const NODE_OPTION_DEFAULTS = { timeout: 30_000, attempts: 3, backoff_ms: 1_000 } as const;
/** The largest value of each option: nodes and flows' inline steps share them. */
export const NODE_OPTION_LIMITS = { timeout: 900_000, attempts: 20, backoff_ms: 3_600_000 } as const;
/** Largest payload, as JSON, in bytes. */
const MAX_PAYLOAD_BYTES = 65_536;

const collection = z
  .string()
  .max(128, { error: `must be ${collectionRule}` })
  .regex(NODE_COLLECTION, { error: `must be ${collectionRule}` })
  .meta({ description: `Collection subject: ${collectionRule}.` });

const option = (name: keyof typeof NODE_OPTION_LIMITS, description: string) =>
  z
    .number()
    .int({ error: "must be a whole number" })
    .min(1, { error: "must be at least 1" })
    .max(NODE_OPTION_LIMITS[name], { error: `must be at most ${NODE_OPTION_LIMITS[name]}` })
    .default(NODE_OPTION_DEFAULTS[name])
    .meta({ description: `${description} (1-${NODE_OPTION_LIMITS[name]}; default ${NODE_OPTION_DEFAULTS[name]}).` });

/** Retry options with their defaults; flows' inline steps take the same. */
export const nodeOptionsInput = z
  .strictObject({
    timeout: option("timeout", "Milliseconds one attempt may take"),
    attempts: option("attempts", "Attempts in all, the first included"),
    backoff_ms: option("backoff_ms", "Milliseconds to wait before a retry"),
  })
  .prefault({});

/** A payload: a JSON object whose strings may hold `{{...}}` references, checked here so a malformed one names its field. */
export const nodePayloadInput = z
  .record(z.string(), z.unknown())
  .default({})
  .superRefine((payload, ctx) => {
    if (Buffer.byteLength(JSON.stringify(payload), "utf8") > MAX_PAYLOAD_BYTES) {
      ctx.addIssue({ code: "custom", message: `must be at most ${MAX_PAYLOAD_BYTES} bytes as JSON` });
      return;
    }
    for (const problem of inspectPayload(payload).problems) {
      ctx.addIssue({ code: "custom", message: problem.message, path: problem.field });
    }
  })
  .meta({
    description:
      "Free-form JSON object. String values may hold template references `{{trigger.<path>}}`, `{{steps.<name>.<path>}}` and `{{secrets.<key>}}` (array elements as `items.0`; `\\{{` for a literal `{{`).",
  });

/** Problems of a payload that depend on its subject (a `respond` step's refused headers), each under its field. */
export function addSubjectPayloadIssues(
  subject: string,
  payload: Record<string, unknown>,
  ctx: z.RefinementCtx,
  at: (string | number)[] = [],
): void {
  for (const field of REQUIRED_FIELDS[subject] ?? []) {
    if (payload[field] === undefined || payload[field] === null || payload[field] === "") {
      ctx.addIssue({ code: "custom", path: [...at, "payload", field], message: `is required by ${subject}` });
    }
  }
  if (subject !== "respond") return;
  for (const problem of respondPayloadProblems(payload)) {
    ctx.addIssue({ code: "custom", path: [...at, "payload", ...problem.field], message: problem.message });
  }
}

/** Payload fields a subject cannot run without (their values may be templates, checked when the step runs). */
const REQUIRED_FIELDS: Partial<Record<string, readonly string[]>> = {
  "wait.event": ["key"],
  "event.send": ["key"],
  "flow.call": ["flow_id"],
  "mcp.call": ["server", "tool"],
};

export const nodeTemplateInput = z
  .object({
    name: z.string().min(1, { error: "must not be empty" }).max(200, { error: "must be at most 200 characters" }),
    description: z.string().max(2000, { error: "must be at most 2000 characters" }).default(""),
    node_type: z.literal("function", { error: 'must be "function"' }),
    subject: z
      .enum(BUILT_IN_SUBJECTS, { error: `must be one of ${BUILT_IN_SUBJECTS.join(", ")}` })
      .meta({ description: "The built-in function the node invokes." }),
    payload: nodePayloadInput,
    options: nodeOptionsInput,
  })
  .superRefine((node, ctx) => addSubjectPayloadIssues(node.subject, node.payload, ctx));

export type NodeTemplateInput = z.infer<typeof nodeTemplateInput>;

export const nodeTemplate = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    node_type: z.literal("function"),
    subject: z.enum(BUILT_IN_SUBJECTS),
    payload: z.record(z.string(), z.unknown()),
    options: z.object({
      timeout: z.number().int().meta({ description: "Milliseconds." }),
      attempts: z.number().int(),
      backoff_ms: z.number().int(),
    }),
  })
  .meta({ id: "NodeTemplate" });

const nodeSubject = z.string().meta({ description: "The node's own subject: nodes.<id>; flows name it in steps." });
const modified = z.number().int().meta({ description: "When the node was last written, Unix time in seconds." });

export const node = z
  .object({ id: z.string(), subject: nodeSubject, collection: z.string(), data: nodeTemplate, modified })
  .meta({ id: "Node" });

export const nodeIdInput = z.object({
  id: pathParam("Id of the node (a UUID).").pipe(z.uuid({ error: "must be a UUID" })),
});

export const createNodeInput = z.object({ collection, data: nodeTemplateInput });

export const createNodeOutput = z.object({
  subject: nodeSubject,
  collection: z.string(),
  data: nodeTemplate,
  type: z.literal("created"),
  modified,
});

export const updateNodeInput = nodeIdInput.extend({
  collection: collection.optional().meta({ description: "Moves the node to this collection; absent, it stays." }),
  data: nodeTemplateInput,
});

export const updateNodeOutput = node.extend({ type: z.literal("updated") });

export const listNodesInput = z.object({
  collection: collection.optional().meta({ description: "Only nodes of this collection; absent, every node." }),
});

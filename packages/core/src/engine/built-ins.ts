import { z } from "zod";
import type { StorageDeps } from "../storage/deps.ts";
import { findBucket } from "../storage/kv/buckets.ts";
import { putKey } from "../storage/kv/keys.ts";
import { keyText } from "../storage/names.ts";
import { publish } from "../storage/streams/messages.ts";
import { SUBJECT_RULE, subjectProblem } from "../storage/streams/subjects.ts";
import { eventKey } from "./event-keys.ts";
import type { RunEvents } from "./events.ts";
import { stepHeaders } from "./header-schema.ts";
import type { McpTools } from "./mcp-call/tools.ts";
import { boundedOutbound, type OutboundSlots } from "./outbound-slots.ts";
import type { RespondOutput } from "./records.ts";
import { failStep, type StepFunction, type StepFunctions, unavailableStep } from "./step-functions.ts";

/** Reads a payload with a schema; a payload that does not fit fails the step for good, naming the field. */
function read<S extends z.ZodType>(schema: S, payload: unknown): z.output<S> {
  const parsed = schema.safeParse(payload);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${issue.path.join(".") || "payload"}: ${issue.message}`);
  return failStep(`invalid payload: ${problems.join("; ")}`);
}

const name = z.string().min(1, "is required").max(64);
const key = keyText.min(1, "is required");
const kvGetPayload = z.object({ bucket: name, key });
const kvPutPayload = z.object({
  bucket: name,
  key,
  value: z.unknown().refine((value) => value !== undefined, "is required"),
  ttl_s: z.number().int().min(1).optional(),
});
const publishPayload = z.object({
  stream: name,
  subject: z.string().refine((subject) => !subjectProblem(subject), `must be ${SUBJECT_RULE}`),
  body: z.record(z.string(), z.unknown()),
});
const respondPayload = z.object({
  status: z.number().int().min(200).max(599).default(200),
  headers: stepHeaders,
  body: z.unknown(),
});

/** `kv.get` answers `{key, value, revision}`, or null when the key is absent; an unknown bucket fails. */
const kvGet =
  (deps: StorageDeps): StepFunction =>
  async (payload, context) => {
    const { bucket, key } = read(kvGetPayload, payload);
    const found = await findBucket(deps, context.accountId, bucket);
    const entry = await deps.broker.kvGet(context.accountId, found.id, key);
    return entry ? { key, value: JSON.parse(entry.value), revision: entry.revision } : null;
  };

/** `kv.put` writes a key of an existing bucket and answers `{revision}`. */
const kvPut =
  (deps: StorageDeps): StepFunction =>
  async (payload, context) => {
    const { bucket, key, value, ttl_s } = read(kvPutPayload, payload);
    const revision = await putKey(deps, context.accountId, bucket, key, { value, ttl_s });
    return { revision };
  };

/** `stream.publish` appends a message to an existing stream and answers `{seq}`. */
const streamPublish =
  (deps: StorageDeps): StepFunction =>
  async (payload, context) => {
    const message = read(publishPayload, payload);
    const seq = await publish(deps, context.accountId, message.stream, message);
    return { seq };
  };

/** `respond` answers what wait mode sends back: status (default 200), headers, body. */
const respond: StepFunction = async (payload) => {
  const { status, headers, body } = read(respondPayload, payload);
  return { status, headers, body: body ?? null } satisfies RespondOutput;
};

const eventSendPayload = z.object({ key: eventKey, data: z.unknown().default(null) });

/** `event.send` delivers an event to the account's runs waiting on its key and answers `{resumed}`. */
const eventSend =
  (events: RunEvents): StepFunction =>
  async (payload, context) => {
    const { key, data } = read(eventSendPayload, payload);
    return { resumed: await events.send(context.accountId, key, data) };
  };

/** `transform` answers its (resolved) payload. */
const transform: StepFunction = async (payload) => payload;

/** The implementations of the subjects that come from other modules (safe HTTP, the sandbox). */
export interface ModuleSteps {
  "http.request"?: StepFunction;
  js?: StepFunction;
}

/**
 * Every built-in subject but the engine's own (`delay`, `wait.event`, `flow.call`).
 * `http.request` and `js` come from their modules; a build without them fails those steps
 * with a clear error. Each `http.request` and `mcp.call` waits first for a slot of its run
 * and of its account (`deps.outbound`, the bounds of the account's plan).
 */
export function createStepFunctions(
  deps: StorageDeps & { events: RunEvents; outbound: OutboundSlots; mcp: McpTools },
  modules: ModuleSteps = {},
): StepFunctions {
  const request = modules["http.request"];
  return {
    transform,
    respond,
    "event.send": eventSend(deps.events),
    "kv.get": kvGet(deps),
    "kv.put": kvPut(deps),
    "stream.publish": streamPublish(deps),
    "http.request": request ? boundedOutbound(request, deps.outbound, deps.limits) : unavailableStep("http.request"),
    js: modules.js ?? unavailableStep("js"),
    "mcp.call": boundedOutbound((payload, context) => deps.mcp.call(payload, context), deps.outbound, deps.limits),
  };
}

/** The subjects whose steps only compute: a run of nothing else may run in the API process that accepted it (in-place.ts). */
export const COMPUTING_SUBJECTS: ReadonlySet<string> = new Set(["transform", "respond"]);

/**
 * The step functions of a process that executes only runs of computing steps (a start run
 * in place, in-place.ts): `transform` and `respond`. Any other subject fails
 * its step there, which `runsInPlace` never lets a run reach.
 */
export function computingStepFunctions(): StepFunctions {
  return {
    transform,
    respond,
    "event.send": unavailableStep("event.send"),
    "kv.get": unavailableStep("kv.get"),
    "kv.put": unavailableStep("kv.put"),
    "stream.publish": unavailableStep("stream.publish"),
    "http.request": unavailableStep("http.request"),
    js: unavailableStep("js"),
    "mcp.call": unavailableStep("mcp.call"),
  };
}

/**
 * Payload fields that hold a URL, per subject: a reference inside their text is percent-
 * encoded where it lands, so data cannot change the URL's shape (see templates/payload.ts).
 */
export const URL_FIELDS: Partial<Record<string, readonly string[]>> = {
  "http.request": ["url"],
  "mcp.call": ["server"],
};

/**
 * Subjects whose attempts change nothing outside the run: re-running one after a crash is
 * harmless, so their attempts are not recorded before they start (which saves a write).
 * `js` is one: the sandbox reaches nothing outside its input and output.
 */
export const PURE_SUBJECTS: ReadonlySet<string> = new Set(["transform", "respond", "kv.get", "js"]);

import type { StepInput, StepOptions } from "@platform/db";
import { z } from "zod";
import { BUILT_IN_SUBJECTS } from "../built-in-functions.ts";
import { addSubjectPayloadIssues, NODE_OPTION_LIMITS, nodePayloadInput } from "../hub/nodes/schemas.ts";
import { respondPayloadProblems } from "../runs/tenant-answers.ts";
import type { Same } from "../same-shape.ts";
import { inspectPayload } from "../templates/index.ts";
import { STEP_OPTION_DEFAULTS } from "./step-defaults.ts";

/**
 * The step language as clients write it: tasks (a node template reference or an inline
 * node), control steps holding lists of steps (`switch`, `for_each`, `parallel`), `stop`,
 * and the guards any step may carry (`if`, `catch`). What a save stores of a step is a stored
 * shape (`StepInput`, @platform/db): the transform returns it. Rules across steps, or that
 * need the database, are checked by `steps.ts`.
 */

/** Steps in one list. */
export const MAX_STEPS = 100;
/** Step names are what `{{steps.<name>}}` can name: one template path segment. */
const STEP_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const stepNameRule = "1-64 letters, digits, _ or -";
/** A node template's subject: `nodes.<uuid>`. */
const NODE_REFERENCE = /^nodes\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

const stepName = z
  .string()
  .regex(STEP_NAME, { error: `must be ${stepNameRule}` })
  .meta({
    description: `Unique in the flow; later steps read its output as \`{{steps.<name>...}}\`. ${stepNameRule}.`,
  });

const nodeReference = z
  .string()
  .regex(NODE_REFERENCE, { error: "must be a node template's subject: nodes.<id>" })
  .meta({ description: "A node template of the account, by its subject `nodes.<id>`." });

const subject = z.enum(BUILT_IN_SUBJECTS, { error: `must be one of ${BUILT_IN_SUBJECTS.join(", ")}` }).meta({
  description:
    'The built-in function the step runs. `mcp.call` calls a tool of a remote MCP server over Streamable HTTP: payload `{"server": "<http(s) URL>" | {"registry": "<server name in the registry mirror>"}, "tool", "arguments": {...}, "headers": {...}}`; its output is the tool\'s `structuredContent`, else its `content`; a tool answering `isError` fails the step with its text; every request goes through the address guard of `http.request` (`ALLOW_PRIVATE_NETWORK`, `HTTP_REQUEST_ALLOWED_NETWORKS`); the arguments are checked against the tool\'s input schema at save (static ones, when the server answers; a server that does not answer at save is not an error) and before the call.',
});

const option = (name: keyof typeof NODE_OPTION_LIMITS, description: string) =>
  z
    .number()
    .int({ error: "must be a whole number" })
    .min(1, { error: "must be at least 1" })
    .max(NODE_OPTION_LIMITS[name], { error: `must be at most ${NODE_OPTION_LIMITS[name]}` })
    .default(STEP_OPTION_DEFAULTS[name])
    .meta({ description: `${description} (1-${NODE_OPTION_LIMITS[name]}; default ${STEP_OPTION_DEFAULTS[name]}).` });

const stepOptions = z.strictObject({
  timeout: option("timeout", "Milliseconds one attempt may take"),
  attempts: option("attempts", "Attempts in all, the first included"),
  backoff_ms: option("backoff_ms", "Milliseconds before the first retry, doubling (with jitter) for each next one"),
});

const INLINE_ONLY = ["node_type", "subject", "payload", "options"] as const;
/** The keys that make a step a control step; a step holds at most one. */
const CONTROL_KEYS = ["switch", "for_each", "parallel", "stop"] as const;
/** What belongs to one kind of step only, by kind. */
const KIND_ONLY: Record<string, readonly string[]> = {
  switch: ["default"],
  for_each: ["steps", "concurrency"],
};

/** How deep lists of steps may nest (a for-each in a switch case in a parallel branch is 3). */
export const MAX_NESTING = 8;
const MAX_CASES = 50;
const MAX_BRANCHES = 20;
const MAX_CONCURRENCY = 50;

/** A template field (`if`, `when`, `for_each`, a limit's `key`): checked like payload strings. */
export const templateField = (description: string) =>
  z
    .string()
    .min(1, { error: "must not be empty" })
    .max(4096, { error: "must be at most 4096 characters" })
    .superRefine((text, ctx) => {
      for (const problem of inspectPayload(text).problems) ctx.addIssue({ code: "custom", message: problem.message });
      if (!text.includes("{{")) ctx.addIssue({ code: "custom", message: "must hold a template: {{ expression }}" });
    })
    .meta({ description });

/**
 * A list of steps inside a step. Declared as a list of any JSON here (the OpenAPI document
 * stays free of recursion) and read by `stepList` in the step's transform, each problem
 * named by its full path.
 */
const nestedSteps = (description: string) =>
  z
    .array(z.unknown())
    .min(1, { error: "must hold at least one step" })
    .max(MAX_STEPS, { error: `must hold at most ${MAX_STEPS} steps` })
    .meta({ description: `${description} Each item is a step, shaped as the items of the flow's \`steps\`.` });

/** A `stop`'s answer: its headers are checked against the allow list as a `respond` step's are. */
const respondShape = z
  .strictObject({
    status: z.number().int().min(200).max(599).default(200),
    headers: z.record(z.string(), z.string()).default({}),
    body: z.unknown().optional(),
  })
  .superRefine((response, ctx) => {
    for (const problem of respondPayloadProblems(response)) {
      ctx.addIssue({ code: "custom", path: problem.field, message: problem.message });
    }
  });

/** Nesting of the lists being read (parsing is synchronous): bounds the recursion a hostile body could ask for. */
let nesting = 0;

/** Reads a nested list with the step schema, its problems reported under `path`. */
function readNested(list: unknown[], path: (string | number)[], ctx: z.RefinementCtx): StepInput[] | undefined {
  if (nesting >= MAX_NESTING) {
    ctx.addIssue({ code: "custom", path, message: `lists of steps nest at most ${MAX_NESTING} deep` });
    return undefined;
  }
  nesting += 1;
  try {
    const parsed = stepList.safeParse(list);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) {
      ctx.addIssue({
        code: "custom",
        path: [...path, ...issue.path.map((key) => key as string | number)],
        message: issue.message,
      });
    }
    return undefined;
  } finally {
    nesting -= 1;
  }
}

const stepShape = {
  name: stepName,
  node: nodeReference.optional(),
  node_type: z.literal("function", { error: 'must be "function"' }).optional(),
  subject: subject.optional(),
  payload: z.record(z.string(), z.unknown()).optional().meta({
    description:
      "Free-form JSON object (at most 64 KiB as JSON). String values may hold templates: `{{trigger.<path>}}`, `{{steps.<name>.<path>}}` (an earlier step), `{{secrets.<key>}}`, `{{run.id}}`, and inside a for-each `{{item}}`/`{{index}}`; anything else between the braces is a JSONata expression (`{{trigger.body.amount > 100}}`, `{{$sum(trigger.body.items.price)}}`). A string that is exactly one template keeps its value's type; `\\{{` is a literal `{{`.",
  }),
  options: stepOptions.optional(),
  if: templateField(
    'A condition: when its value is false, null, missing, 0, "" or [], the step is skipped (status `skipped`, output null).',
  ).optional(),
  catch: nestedSteps(
    "Steps run when this step fails after its retries, with `{{error.message}}` and `{{error.step}}` in scope; their last output becomes this step's and the run goes on.",
  ).optional(),
  switch: z
    .array(z.strictObject({ when: templateField("A condition (see `if`)."), steps: nestedSteps("The case's steps.") }))
    .min(1, { error: "must hold at least one case" })
    .max(MAX_CASES, { error: `must hold at most ${MAX_CASES} cases` })
    .optional()
    .meta({ description: "Ordered cases: the first whose `when` holds runs; the step's output is its last step's." }),
  default: nestedSteps("With `switch`: the steps run when no case holds.").optional(),
  for_each: templateField(
    "An array to iterate: its steps (`steps`) run once per item, `{{item}}` and `{{index}}` in scope.",
  ).optional(),
  steps: nestedSteps("With `for_each`: the steps run per item.").optional(),
  concurrency: z
    .number()
    .int({ error: "must be a whole number" })
    .min(1, { error: "must be at least 1" })
    .max(MAX_CONCURRENCY, { error: `must be at most ${MAX_CONCURRENCY}` })
    .optional()
    .meta({ description: `With \`for_each\`: items run at once (1-${MAX_CONCURRENCY}, default 1).` }),
  parallel: z
    .record(z.string().regex(STEP_NAME, { error: `a branch name must be ${stepNameRule}` }), nestedSteps("A branch."))
    .refine((branches) => Object.keys(branches).length >= 1, { error: "must name at least one branch" })
    .refine((branches) => Object.keys(branches).length <= MAX_BRANCHES, {
      error: `must name at most ${MAX_BRANCHES} branches`,
    })
    .optional()
    .meta({ description: "Named branches, all run at once; the output is an object of each branch's last output." }),
  stop: z
    .strictObject({
      output: z.unknown().optional().meta({ description: "The run's output (templates resolved)." }),
      response: respondShape.optional().meta({ description: "In wait mode: the HTTP answer (templates resolved)." }),
    })
    .optional()
    .meta({ description: "Ends the run here, `succeeded`." }),
};

type RawStep = z.infer<z.ZodObject<typeof stepShape>>;

/** The guards of a step (`if`, `catch`), the handler read as a nested list. */
function guards(step: RawStep, ctx: z.RefinementCtx) {
  const read: { if?: string; catch?: StepInput[] } = {};
  if (step.if !== undefined) read.if = step.if;
  if (step.catch !== undefined) {
    const handler = readNested(step.catch, ["catch"], ctx);
    if (handler) read.catch = handler;
  }
  return read;
}

/** A control step (the one control key it holds), its lists read as nested lists. */
function controlStep(step: RawStep, kind: (typeof CONTROL_KEYS)[number], ctx: z.RefinementCtx): StepInput {
  const base = { name: step.name, ...guards(step, ctx) };
  if (kind === "switch") {
    const cases = (step.switch ?? []).map((branch, index) => ({
      when: branch.when,
      steps: readNested(branch.steps, ["switch", index, "steps"], ctx) ?? [],
    }));
    const fallback = step.default === undefined ? undefined : readNested(step.default, ["default"], ctx);
    return { ...base, switch: cases, ...(fallback ? { default: fallback } : {}) };
  }
  if (kind === "for_each") {
    if (step.steps === undefined)
      ctx.addIssue({ code: "custom", path: ["steps"], message: "is required with for_each" });
    const steps = step.steps === undefined ? [] : (readNested(step.steps, ["steps"], ctx) ?? []);
    return { ...base, for_each: step.for_each as string, steps, concurrency: step.concurrency ?? 1 };
  }
  if (kind === "parallel") {
    const branches = Object.fromEntries(
      Object.entries(step.parallel ?? {}).map(([branch, steps]) => [
        branch,
        readNested(steps, ["parallel", branch], ctx) ?? [],
      ]),
    );
    return { ...base, parallel: branches };
  }
  if (step.catch !== undefined)
    ctx.addIssue({ code: "custom", path: ["catch"], message: "is not used with stop: a stop cannot fail" });
  return { name: step.name, ...(step.if === undefined ? {} : { if: step.if }), stop: step.stop ?? {} };
}

/**
 * One object for every kind of step, so a mistake is named by its field: with `node` it is
 * a reference and takes only the guards; with one of `switch`, `for_each`, `parallel` or
 * `stop` it is that control step; otherwise `subject` is required. The payload gets the
 * node templates' checks (size, template syntax), each problem under its own field.
 */
export const stepInput = z
  .strictObject(stepShape)
  .transform((step, ctx): StepInput => {
    const kinds = CONTROL_KEYS.filter((key) => step[key] !== undefined);
    if (kinds.length > 1) {
      ctx.addIssue({
        code: "custom",
        path: [kinds[1] as string],
        message: `a step is one kind: ${kinds.join(" and ")} cannot be combined`,
      });
      return z.NEVER;
    }
    for (const [kind, keys] of Object.entries(KIND_ONLY)) {
      if (kinds[0] === kind) continue;
      for (const key of keys) {
        if (step[key as keyof RawStep] !== undefined) {
          ctx.addIssue({ code: "custom", path: [key], message: `is used with ${kind} only` });
        }
      }
    }
    const [kind] = kinds;
    if (kind !== undefined) {
      const taskFields = ["node", ...INLINE_ONLY].filter((field) => step[field as keyof RawStep] !== undefined);
      for (const field of taskFields) {
        ctx.addIssue({ code: "custom", path: [field], message: `is not used with ${kind}` });
      }
      return controlStep(step, kind, ctx);
    }
    if (step.node !== undefined) {
      for (const field of INLINE_ONLY) {
        if (step[field] !== undefined) {
          ctx.addIssue({
            code: "custom",
            path: [field],
            message: "is not used with node: a node reference is only name and node (and if, catch)",
          });
        }
      }
      return { name: step.name, node: step.node.toLowerCase(), ...guards(step, ctx) };
    }
    if (step.subject === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["subject"],
        message: "is required (or node: a node template's subject, or one of switch, for_each, parallel, stop)",
      });
      return z.NEVER;
    }
    const payload = nodePayloadInput.safeParse(step.payload);
    if (!payload.success) {
      for (const issue of payload.error.issues) {
        ctx.addIssue({ code: "custom", path: ["payload", ...issue.path.map(String)], message: issue.message });
      }
      return z.NEVER;
    }
    addSubjectPayloadIssues(step.subject, payload.data, ctx);
    return {
      name: step.name,
      node_type: "function",
      subject: step.subject,
      payload: payload.data,
      options: step.options ?? { ...STEP_OPTION_DEFAULTS },
      ...guards(step, ctx),
    };
  })
  .meta({
    description:
      'A step: a node template reference `{"name", "node": "nodes.<id>"}` (resolved when the flow is saved: the revision runs the node as it was then), an inline node `{"name", "node_type": "function", "subject", "payload", "options"}`, or a control step `{"name", "switch" | "for_each" | "parallel" | "stop": ...}`. Any step but `stop` may carry `if` and `catch`. Step names are unique in the whole flow.',
  });

/** A nested list as `readNested` reads it. */
const stepList = z.array(stepInput);

/** A step as a flow answers it: the API describes it loosely (the step language is recursive). */
export const stepOutput = z.looseObject({ name: z.string() }).meta({
  id: "FlowStep",
  description:
    "A step as saved: a node reference `{name, node}`, an inline node `{name, node_type, subject, payload, options}` or a control step `{name, switch | for_each | parallel | stop}`, with `if` and `catch` when given. Defaults are filled in.",
});

/** The options a save fills in are the ones a revision stores. */
const _stepOptionsAreStored: Same<z.output<typeof stepOptions>, StepOptions> = true;

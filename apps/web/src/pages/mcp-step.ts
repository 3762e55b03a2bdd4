/**
 * "Use in a flow" on the MCP registry page: the `mcp.call` step that calls a registry
 * server's tool, handed to the flow editor (as the `add_step` search parameter of its
 * route), which appends it to the steps it shows.
 */
import { parseJson } from "../ui/json-field.ts";

/** What the step needs of a tool, as `POST /hub/mcp/registry/tools` answers it. */
export interface ToolChoice {
  name: string;
  inputSchema: Record<string, unknown>;
}

export interface McpCallStep {
  name: string;
  subject: "mcp.call";
  payload: {
    server: { registry: string };
    tool: string;
    arguments: Record<string, string>;
    headers?: Record<string, string>;
  };
}

/** A name a step may have (1-64 letters, digits, _ or -), not one of `taken`. */
export function freeStepName(wanted: string, taken: ReadonlySet<string>): string {
  const base = wanted.replace(/[^A-Za-z0-9_-]+/g, "_").slice(0, 60) || "tool";
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base}_${n}`)) return `${base}_${n}`;
}

/** `{{trigger.order_id}}`; a name that is no plain identifier is quoted as JSONata quotes it. */
const triggerField = (property: string) =>
  /^[A-Za-z_][A-Za-z0-9_]*$/.test(property)
    ? `{{trigger.${property}}}`
    : `{{trigger.\`${property.replaceAll("`", "")}\`}}`;

/**
 * The arguments a tool requires, each read from the trigger's field of the same name: a step
 * that runs as it is when the trigger carries them, and a start for the person to edit.
 * Optional arguments are left out (a template to a missing field would send null).
 */
export function argumentsSkeleton(inputSchema: Record<string, unknown>): Record<string, string> {
  const required = Array.isArray(inputSchema.required) ? inputSchema.required : [];
  return Object.fromEntries(
    required.filter((name): name is string => typeof name === "string").map((name) => [name, triggerField(name)]),
  );
}

/** The step calling `tool` of the registry server `server`, named after the tool and unlike `takenNames`. */
export function mcpCallStep(
  server: string,
  tool: ToolChoice,
  headers: Record<string, string> = {},
  takenNames: ReadonlySet<string> = new Set(),
): McpCallStep {
  return {
    name: freeStepName(tool.name, takenNames),
    subject: "mcp.call",
    payload: {
      server: { registry: server },
      tool: tool.name,
      arguments: argumentsSkeleton(tool.inputSchema),
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
    },
  };
}

/** The step as the editor's route carries it; undefined for anything that is not such a step. */
export function readAddedStep(text: unknown): McpCallStep | undefined {
  if (typeof text !== "string") return undefined;
  const parsed = parseJson(text);
  if (!("value" in parsed)) return undefined;
  const step = parsed.value as Partial<McpCallStep> | null;
  if (!step || typeof step !== "object" || typeof step.name !== "string" || step.subject !== "mcp.call") {
    return undefined;
  }
  return step as McpCallStep;
}

/** Names of the steps at the top of a steps list (what a new step's name must not be). */
function topNames(steps: unknown): Set<string> {
  const list = Array.isArray(steps) ? steps : [];
  return new Set(
    list.map((step) => (step as { name?: unknown })?.name).filter((n): n is string => typeof n === "string"),
  );
}

/**
 * The editor's steps text with `step` appended (renamed when its name is taken); `replace`
 * (a new flow's example steps) puts it in their place. Text that is not a list of steps
 * yet is left as it is: the person is told, and adds the step by hand.
 */
export function withStepAdded(
  stepsText: string,
  step: McpCallStep,
  replace = false,
): { text: string; added: McpCallStep } | undefined {
  if (replace) return { text: JSON.stringify([step], null, 2), added: step };
  const parsed = parseJson(stepsText);
  if (!("value" in parsed) || !Array.isArray(parsed.value)) return undefined;
  const added = { ...step, name: freeStepName(step.name, topNames(parsed.value)) };
  return { text: JSON.stringify([...parsed.value, added], null, 2), added };
}

/** The search of the flow editor's routes: `add_step`, a step to append (from the registry page). */
export const addStepSearch = (search: Record<string, unknown>): { add_step?: string } =>
  typeof search.add_step === "string" ? { add_step: search.add_step } : {};

/**
 * The check a save makes of its `mcp.call` steps: when a step's server, tool and headers are
 * known at save (no templates, or headers whose only templates are the account's secrets),
 * the server is asked for its tools (`tools/list`, through the address guard and the tool-list
 * cache) and the step's static arguments — those without templates — are checked against
 * the tool's input schema. An unknown tool or an argument that does not fit is a problem
 * naming the step's field; a server that does not answer in time (or cannot be reached, or
 * is refused by the address guard) is not: its steps are checked when they run.
 */
import type { StoredStep } from "@platform/db";
import { mcpServerUrl } from "../engine/mcp-call/payload.ts";
import type { McpTools, ToolTable } from "../engine/mcp-call/tools.ts";
import type { Problem } from "../errors.ts";
import { readSecret, type SecretsDeps } from "../secrets/secrets.ts";
import { type FieldPath, parseTemplate, type TemplatePart } from "../templates/index.ts";
import { childLists } from "./step-tree.ts";

/** How long a save waits for a server's tool list. */
export const SAVE_CHECK_TIMEOUT_MS = 5000;

export interface McpCheckDeps extends SecretsDeps {
  mcp: Pick<McpTools, "tools" | "serverUrl">;
}

interface McpStep {
  path: FieldPath;
  payload: Record<string, unknown>;
}

const NOT_STATIC = Symbol("not static");

/** A template string's parts, or undefined when it does not parse (the save's own checks say why). */
function partsOf(text: string): TemplatePart[] | undefined {
  try {
    return parseTemplate(text);
  } catch {
    return undefined;
  }
}

/** The value with its literal text unescaped, or NOT_STATIC when a template is anywhere in it. */
function staticValue(value: unknown): unknown {
  if (typeof value === "string") {
    const parts = partsOf(value);
    if (!parts || parts.some((part) => typeof part !== "string")) return NOT_STATIC;
    return parts.join("");
  }
  if (Array.isArray(value)) {
    const items = value.map(staticValue);
    return items.includes(NOT_STATIC) ? NOT_STATIC : items;
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).map(([key, item]) => [key, staticValue(item)] as const);
    return entries.some(([, item]) => item === NOT_STATIC) ? NOT_STATIC : Object.fromEntries(entries);
  }
  return value;
}

/** Every `mcp.call` task of a list, in every nested list, with its path. */
function mcpSteps(list: StoredStep[], at: FieldPath, found: McpStep[] = []): McpStep[] {
  for (const [index, step] of list.entries()) {
    const path = [...at, index];
    if ("subject" in step && step.subject === "mcp.call") found.push({ path, payload: step.payload });
    for (const child of childLists(step)) mcpSteps(child.steps, [...path, ...child.field], found);
  }
  return found;
}

/** The headers as sent, their secrets read; undefined when one holds another template or a secret cannot be read. */
export async function knownHeaders(
  deps: SecretsDeps,
  accountId: string,
  headers: unknown,
): Promise<Record<string, string> | undefined> {
  if (headers === undefined) return {};
  if (headers === null || typeof headers !== "object" || Array.isArray(headers)) return undefined;
  const known: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== "string") {
      known[name] = String(value);
      continue;
    }
    const parts = partsOf(value);
    if (!parts) return undefined;
    let text = "";
    for (const part of parts) {
      if (typeof part === "string") text += part;
      else if (part.kind === "path" && part.root === "secrets" && part.path.length === 1) {
        const secret = await readSecret(deps, accountId, part.path[0] as string).catch(() => undefined);
        if (secret === undefined) return undefined;
        text += secret;
      } else return undefined;
    }
    known[name] = text;
  }
  return known;
}

/** The problems of one step against its server's tools; none when it cannot be checked at save. */
async function stepProblems(deps: McpCheckDeps, accountId: string, step: McpStep): Promise<Problem[]> {
  const { payload, path } = step;
  const server = staticValue(payload.server);
  const tool = staticValue(payload.tool);
  const args = payload.arguments ?? {};
  if (server === NOT_STATIC || typeof tool !== "string") return [];
  if (typeof server === "string" && !mcpServerUrl.safeParse(server).success) {
    return [{ path: [...path, "payload", "server"].join("."), message: "must be an absolute http:// or https:// URL" }];
  }
  if (args === null || typeof args !== "object" || Array.isArray(args)) return [];
  const headers = await knownHeaders(deps, accountId, payload.headers);
  if (!headers) return [];
  let tools: ToolTable;
  let url: string;
  try {
    url = await deps.mcp.serverUrl(server as string | { registry: string });
    const signal = AbortSignal.timeout(SAVE_CHECK_TIMEOUT_MS);
    tools = await deps.mcp.tools(accountId, { url, headers }, signal, SAVE_CHECK_TIMEOUT_MS);
  } catch {
    return [];
  }
  const at = (field: FieldPath) => [...path, "payload", ...field].join(".");
  const check = tools.get(tool);
  if (!check) {
    const names = [...tools.keys()].slice(0, 20).join(", ");
    return [{ path: at(["tool"]), message: `${url} has no tool "${tool}" (its tools: ${names || "none"})` }];
  }
  // Arguments with templates are known only at run: present here as null, and their problems left out.
  const templated = new Set<string>();
  const known: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) {
    const fixed = staticValue(value);
    if (fixed === NOT_STATIC) templated.add(name);
    known[name] = fixed === NOT_STATIC ? null : fixed;
  }
  return check(known)
    .filter(({ field }) => !templated.has(field.split(".")[0] ?? ""))
    .map(({ field, message }) => ({
      path: at(["arguments", ...(field ? [field] : [])]),
      message: `${message} (input schema of tool "${tool}")`,
    }));
}

/** The problems of a flow's `mcp.call` steps whose servers answer at save (all servers asked at once). */
export async function mcpCallProblems(
  deps: McpCheckDeps,
  accountId: string,
  steps: StoredStep[],
  onFailure: StoredStep[],
): Promise<Problem[]> {
  const found = [...mcpSteps(steps, ["steps"]), ...mcpSteps(onFailure, ["on_failure"])];
  if (found.length === 0) return [];
  const problems = await Promise.all(found.map((step) => stepProblems(deps, accountId, step)));
  return problems.flat();
}

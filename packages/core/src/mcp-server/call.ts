import { type CallToolResult, ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { ValidateFunction } from "ajv";
import type { Principal } from "../caller.ts";
import { ERRORS, isDomainError, type Problem, problemText } from "../errors.ts";
import { findUnsafeInput } from "../input-guard.ts";
import type { RunOutcome } from "../runs/service.ts";
import type { Services } from "../services.ts";
import type { ToolFlow } from "./catalog.ts";
import { compileToolSchema, problemsOfAjv } from "./json-schema.ts";

/**
 * `tools/call`: a tool's arguments, checked against its `input_schema`, start its flow as
 * `POST /flows/{id}/runs?wait=true` does (runs.startAndWait: the same checks, the same
 * `runs_per_minute`, a run like any other), and the run's outcome is the tool's result.
 * Arguments the schema refuses are a JSON-RPC error (-32602) naming the fields and start no run.
 */

/** Compiled schemas by flow, revision and field: a flow's schemas change only with its revision. */
const compiled = new Map<string, ValidateFunction>();
const COMPILED_MAX = 500;

function validatorOf(tool: ToolFlow, field: "input_schema" | "output_schema"): ValidateFunction | null {
  const schema = tool.tool[field];
  if (schema === null) return null;
  const key = `${tool.flowId}:${tool.revision}:${field}`;
  let validate = compiled.get(key);
  if (validate === undefined) {
    const result = compileToolSchema(schema, field);
    // Checked at save: a schema that no longer compiles (a stored one, before a rule) is the server's fault.
    if (!result.ok)
      throw new Error(`the ${field} of flow ${tool.flowId} does not compile: ${result.problems[0]?.message}`);
    validate = result.validate;
    if (compiled.size >= COMPILED_MAX) compiled.clear();
    compiled.set(key, validate);
  }
  return validate;
}

const invalidArguments = (problems: readonly Problem[]) =>
  new McpError(
    ErrorCode.InvalidParams,
    `invalid arguments: ${problems.map((problem) => problemText(problem, "arguments")).join("; ")}`,
    {
      problems: problems.map((problem) => ({
        ...problem,
        path: problem.path ? `arguments.${problem.path}` : "arguments",
      })),
    },
  );

/** The arguments as trigger data, or the -32602 that refuses them. */
function checkedArguments(tool: ToolFlow, args: Record<string, unknown> | undefined): Record<string, unknown> {
  const data = args ?? {};
  const unsafe = findUnsafeInput(data);
  if (unsafe) throw invalidArguments([unsafe]);
  const validate = validatorOf(tool, "input_schema");
  if (validate && !validate(data)) throw invalidArguments(problemsOfAjv(validate.errors, ""));
  return data;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

const textOf = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value ?? null));

/** A result as the tool answers it, with the run it was (`_meta.run_id`). */
const result = (runId: string, text: string, extra: Partial<CallToolResult> = {}): CallToolResult => ({
  content: [{ type: "text", text }],
  _meta: { run_id: runId },
  ...extra,
});

/** What a run that succeeded answers: its output (a `respond` step's body, as wait mode answers). */
function succeeded(tool: ToolFlow, runId: string, status: number, output: unknown): CallToolResult {
  // A flow that answers an error status (a `respond` step's) failed as its caller sees it.
  if (status >= 400) return result(runId, textOf(output), { isError: true });
  const validate = validatorOf(tool, "output_schema");
  if (validate) {
    if (!isObject(output) || !validate(output)) {
      const problems = isObject(output)
        ? problemsOfAjv(validate.errors, "")
        : [{ path: "", message: "must be an object" }];
      return result(
        runId,
        `the run ${runId} succeeded, but its output does not match the tool's output_schema: ${problems.map((problem) => problemText(problem, "output")).join("; ")}`,
        { isError: true },
      );
    }
  }
  return result(runId, textOf(output), isObject(output) ? { structuredContent: output } : {});
}

/**
 * The tool's answer to the run's outcome. A run still going when the wait is over answers its
 * id and where to follow it; a tool that declares an output schema answers that as an error
 * (MCP requires such a tool's results to carry the structured output, which is not there yet).
 */
function answer(tool: ToolFlow, outcome: RunOutcome, waitMs: number): CallToolResult {
  const { runId } = outcome;
  switch (outcome.status) {
    case "succeeded":
      return succeeded(tool, runId, outcome.response.status, outcome.response.body);
    case "failed":
      return result(runId, outcome.error, { isError: true });
    case "timeout":
    case "duplicate":
      return result(
        runId,
        `the run ${runId} is still running after ${Math.round(waitMs / 1000)} s; follow it with GET /runs/${runId}`,
        tool.tool.output_schema === null ? {} : { isError: true },
      );
  }
}

/** How a call reports progress while its run goes on, when the client asked for it. */
export type ProgressReporter = (progress: number, message: string) => Promise<void>;

const PROGRESS_EVERY_MS = 1000;

export async function callTool(
  services: Pick<Services, "runs" | "config" | "logger">,
  principal: Principal,
  tool: ToolFlow,
  args: Record<string, unknown> | undefined,
  report: ProgressReporter | null,
): Promise<CallToolResult> {
  const trigger = checkedArguments(tool, args);
  const waitMs = services.config.runs.waitTimeoutMs;
  let ticker: ReturnType<typeof setInterval> | undefined;
  if (report) {
    // Progress counts the reports; the first goes out as the run is started, one a second after it.
    const since = Date.now();
    let reports = 0;
    const tell = (message: string) => {
      reports += 1;
      report(reports, message).catch(() => clearInterval(ticker));
    };
    tell(`starting a run of ${tool.title}`);
    ticker = setInterval(
      () => tell(`the run of ${tool.title} is going (${Math.round((Date.now() - since) / 1000)} s)`),
      PROGRESS_EVERY_MS,
    );
  }
  try {
    const start = { accountId: principal.accountId, flowId: tool.flowId, trigger, via: "mcp" as const };
    return answer(tool, await services.runs.startAndWait(start, waitMs), waitMs);
  } catch (error) {
    if (!isDomainError(error) || ERRORS[error.code].status >= 500) throw error;
    // Refused before a run existed (the account's runs_per_minute, the trigger data's size) or the flow just deleted.
    if (error.code === "not_found") throw new McpError(ErrorCode.InvalidParams, `unknown tool: ${tool.tool.tool}`);
    if (error.code === "validation_error" || error.code === "payload_too_large") {
      throw new McpError(ErrorCode.InvalidParams, error.message);
    }
    return { content: [{ type: "text", text: error.message }], isError: true };
  } finally {
    clearInterval(ticker);
  }
}

import { type Credential, parseCredential, type RequestInfo } from "../caller.ts";
import { answerError, DomainError, invalidInput, jsonAnswer } from "../errors.ts";
import { findUnsafeInput } from "../input-guard.ts";
import { readUtf8Text } from "../request-body.ts";
import { UUID } from "../schemas.ts";
import type { Services } from "../services.ts";
import type { RunOutcome } from "./service.ts";
import { allowedAnswerHeaders, sandboxTenantAnswer } from "./tenant-answers.ts";

/** Statuses whose responses carry no body. */
const NO_BODY = new Set([204, 205, 304]);

/**
 * Who hears a run's outcome: the account itself (a run it started by hand), or anyone
 * (webhooks and gateways, whose callers hold no credential of the account).
 */
export type Audience = "account" | "public";

/** A JSON answer about a run, marked as the tenant's (see tenant-answers.ts). */
function runAnswer(status: number, body: unknown): Response {
  const answer = jsonAnswer(status, body);
  sandboxTenantAnswer(answer.headers);
  return answer;
}

/**
 * What wait mode answers (by hand here, for webhooks and gateways too): the `respond`
 * step's status, headers and body (a string body as text, anything else as JSON), else
 * 200 with the last step's output; 500 `{error, run_id}` for a failed run, whose error
 * only the account hears (anyone else hears that the flow failed, and the account reads
 * why in the run); 202 `{run_id}` for one still running when the wait was over. Every
 * answer is sandboxed, and carries only the flow's headers on the allow list (see
 * tenant-answers.ts): others are dropped, whether an expression named them or a revision
 * saved before the list holds them.
 */
export function outcomeResponse(outcome: RunOutcome, audience: Audience): Response {
  switch (outcome.status) {
    case "failed":
      return runAnswer(500, {
        error: audience === "account" ? outcome.error : "the flow failed",
        run_id: outcome.runId,
      });
    case "timeout":
      return runAnswer(202, { run_id: outcome.runId });
    case "duplicate":
      // A repeated delivery: the first run answered it; this one hears that run's id.
      return runAnswer(200, { message: "accepted", run_id: outcome.runId });
    case "succeeded": {
      const { status, headers, body } = outcome.response;
      const answer = new Headers({ "cache-control": "no-store" });
      for (const [name, value] of allowedAnswerHeaders(headers)) answer.set(name, value);
      sandboxTenantAnswer(answer);
      if (NO_BODY.has(status)) return new Response(null, { status, headers: answer });
      const text = typeof body === "string";
      if (!answer.has("content-type")) {
        answer.set("content-type", text ? "text/plain; charset=utf-8" : "application/json");
      }
      return new Response(text ? body : JSON.stringify(body ?? null), { status, headers: answer });
    }
  }
}

/** Reads the trigger data: a JSON object, or `{}` for an empty body. */
async function readTrigger(request: Request): Promise<Record<string, unknown>> {
  const text = await readUtf8Text(request);
  if (!text.trim()) return {};
  if (!request.headers.get("content-type")?.toLowerCase().includes("application/json")) {
    throw new DomainError("unsupported_media_type", "the trigger data must be sent as application/json");
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new DomainError("validation_error", "request body is not valid JSON");
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw invalidInput({ path: "", message: "must be a JSON object (the trigger data)" });
  }
  const problem = findUnsafeInput(body);
  if (problem) throw invalidInput(problem);
  return body as Record<string, unknown>;
}

function readWait(url: URL): boolean {
  const wait = url.searchParams.get("wait");
  if (wait === null || wait === "false" || wait === "0") return false;
  if (wait === "true" || wait === "1") return true;
  throw invalidInput({ path: "wait", message: "must be true or false" });
}

/**
 * `POST /flows/{id}/runs`: starts a run by hand with the body as its trigger data (what
 * users know as "send a test event"). Answers 200 `{message: "accepted", run_id}` once
 * the run is recorded and queued, or with `?wait=true` what wait mode answers (see
 * `outcomeResponse`), waiting at most WAIT_TIMEOUT_MS.
 */
export async function startRunByHand(
  services: Services,
  request: Request,
  info: Pick<RequestInfo, "id" | "path" | "holdOpen">,
  flowId: string,
): Promise<Response> {
  try {
    const url = new URL(request.url);
    const trigger = await readTrigger(request);
    const credential: Credential = parseCredential(request.headers);
    const principal = await services.authenticate(credential, { method: "POST", path: info.path });
    if (!UUID.test(flowId)) throw invalidInput({ path: "id", message: "must be a UUID" });
    const wait = readWait(url);
    const start = {
      accountId: principal.accountId,
      flowId,
      trigger,
      via: "manual" as const,
      traceparent: request.headers.get("traceparent"),
    };
    if (!wait) {
      const { runId } = await services.runs.start(start);
      return jsonAnswer(200, { message: "accepted", run_id: runId });
    }
    const { waitTimeoutMs } = services.config.runs;
    info.holdOpen(waitTimeoutMs);
    return outcomeResponse(await services.runs.startAndWait(start, waitTimeoutMs), "account");
  } catch (error) {
    return answerError(error, { area: "runs", logger: services.logger, requestId: info.id });
  }
}

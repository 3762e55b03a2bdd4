import type { RequestInfo } from "../caller.ts";
import { answerError, DomainError, invalidInput, isDomainError, jsonAnswer } from "../errors.ts";
import { findUnsafeInput } from "../input-guard.ts";
import { outcomeResponse } from "../runs/http.ts";
import type { Services } from "../services.ts";
import { parseWebhookBody } from "../webhooks/body.ts";
import { readWebhookBody } from "../webhooks/read-body.ts";
import { buildRouteTable, type RouteTable } from "./routes.ts";

/**
 * The data plane: `{gateway_url}<path>` (served at `/gw/<topic><path>`). A request whose
 * method and path match a live mapping runs the mapped flow in wait mode and answers with
 * its result. In order: unknown or deleted gateway 404; inactive 503; no mapping 404;
 * over the limit 429 with Retry-After; a body the webhook ingress would refuse 400, 413
 * or 415, and a query or path parameter no run can store (`%00`) 400; then the run: the `respond` step's answer (else 200 with the last output),
 * 500 `{"error": "the flow failed", run_id}` when it failed (the caller holds no credential:
 * the account reads why in the run), 504 `{error, run_id}` past the gateway's timeout
 * (the run goes on and keeps its record).
 */

export type GatewayIngressDeps = Pick<
  Services,
  "db" | "broker" | "metrics" | "config" | "logger" | "storageDefinitions" | "runs"
>;

interface Target {
  method: string;
  path: string;
  flowId: string;
}

/** A gateway as the data plane keeps it, by topic; `live: false` for one deleted or never created. */
type GatewayDefinition =
  | { live: false }
  | {
      live: true;
      id: string;
      accountId: string;
      active: boolean;
      timeoutMs: number;
      limit: { request: number; time: number };
      routes: RouteTable<Target>;
    };

const GATEWAY_PREFIX = "/gw/";
const MISSING = "The requested resource does not exist";

async function loadDefinition(deps: GatewayIngressDeps, topic: string): Promise<GatewayDefinition> {
  const row = await deps.db
    .selectFrom("gateways")
    .select(["id", "account_id", "active", "timeout_ms", "limit_requests", "limit_seconds", "deleted_at"])
    .where("subject", "=", topic)
    .executeTakeFirst();
  if (!row || row.deleted_at) return { live: false };
  const mappings = await deps.db
    .selectFrom("gateway_mappings")
    .select(["method", "path", "flow_id"])
    .where("gateway_id", "=", row.id)
    .where("account_id", "=", row.account_id)
    .where("deleted_at", "is", null)
    .execute();
  return {
    live: true,
    id: row.id,
    accountId: row.account_id,
    active: row.active,
    timeoutMs: row.timeout_ms,
    limit: { request: row.limit_requests, time: row.limit_seconds },
    routes: buildRouteTable(mappings.map((m) => ({ method: m.method, path: m.path, flowId: m.flow_id }))),
  };
}

/** Splits `/gw/<topic><path>` into the topic and the path below it (`/` when there is none). */
function splitGatewayPath(pathname: string): { topic: string; path: string } {
  const rest = pathname.slice(GATEWAY_PREFIX.length);
  const slash = rest.indexOf("/");
  return slash === -1 ? { topic: rest, path: "/" } : { topic: rest.slice(0, slash), path: rest.slice(slash) };
}

/** Query parameters as a flow sees them: one string per name, or every value in order when repeated. */
function queryOf(params: URLSearchParams): Record<string, string | string[]> {
  const grouped = new Map<string, string[]>();
  for (const [name, value] of params) {
    const values = grouped.get(name);
    if (values) values.push(value);
    else grouped.set(name, [value]);
  }
  return Object.fromEntries(
    [...grouped].map(([name, values]) => [name, values.length === 1 ? (values[0] as string) : values]),
  );
}

/** The request's body fields, read and parsed as the webhook ingress does (its limits and content types); none without a body. */
async function bodyFields(deps: GatewayIngressDeps, request: Request): Promise<Record<string, unknown>> {
  const { maxBytes, maxFileContentBytes } = deps.config.webhooks;
  const raw = await readWebhookBody(request, maxBytes);
  const parsed = await parseWebhookBody(raw, request.headers.get("content-type"), { maxFileContentBytes });
  return parsed.fields;
}

export async function handleGatewayRequest(
  deps: GatewayIngressDeps,
  request: Request,
  info: Pick<RequestInfo, "id" | "holdOpen">,
): Promise<Response> {
  try {
    const url = new URL(request.url);
    const { topic, path } = splitGatewayPath(url.pathname);
    const gateway = await deps.storageDefinitions.get("gateway", "", topic, () => loadDefinition(deps, topic));
    if (!gateway?.live) return jsonAnswer(404, { error: MISSING });
    deps.metrics.count(gateway.accountId, "gateway.requests");
    if (!gateway.active) return jsonAnswer(503, { error: "this gateway is inactive" });
    const routed = gateway.routes.match(request.method, path);
    if (!routed) return jsonAnswer(404, { error: `no mapping for ${request.method} ${path}` });

    const { request: allowed, time } = gateway.limit;
    const decision = await deps.broker.allow(gateway.accountId, `gateway:${gateway.id}`, allowed, time);
    if (!decision.allowed) {
      throw new DomainError("rate_limited", `rate limit exceeded: at most ${allowed} requests in ${time} s`, {
        retryAfterSeconds: decision.retryAfterSeconds,
      });
    }

    const fields = await bodyFields(deps, request);
    const query = queryOf(url.searchParams);
    // The body was checked as it was parsed; what the URL carries decoded (`%00`) is checked here.
    const problem = findUnsafeInput({ query, params: routed.params });
    if (problem) throw invalidInput(problem);
    // The platform's fields win over body fields of the same name.
    const trigger = {
      ...fields,
      method: request.method,
      path,
      query,
      headers: Object.fromEntries(request.headers),
      params: routed.params,
      gateway: topic,
      received_at: new Date().toISOString(),
    };
    const start = {
      accountId: gateway.accountId,
      flowId: routed.mapping.flowId,
      trigger,
      via: "gateway" as const,
      traceparent: request.headers.get("traceparent"),
    };
    info.holdOpen(gateway.timeoutMs);
    const outcome = await deps.runs.startAndWait(start, gateway.timeoutMs).catch((error: unknown) => {
      if (isDomainError(error) && error.code === "not_found") {
        throw new DomainError("not_found", "the mapped flow does not exist");
      }
      throw error;
    });
    // The limiter's record of this request is written by now (see RateLimitDecision.recorded).
    await decision.recorded;
    if (outcome.status === "timeout") {
      return jsonAnswer(504, {
        error: `the flow did not finish within ${gateway.timeoutMs} ms`,
        run_id: outcome.runId,
      });
    }
    return outcomeResponse(outcome, "public");
  } catch (error) {
    return answerError(error, { area: "ingress", logger: deps.logger, requestId: info.id });
  }
}

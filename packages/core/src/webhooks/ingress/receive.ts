import type { RequestInfo } from "../../caller.ts";
import { DomainError, jsonAnswer } from "../../errors.ts";
import { findFlowByWebhookId, type WebhookFlow } from "../../flows/webhook-flows.ts";
import { outcomeResponse } from "../../runs/http.ts";
import type { Services } from "../../services.ts";
import { parseWebhookBody } from "../body.ts";
import { serviceBodyProblem, slackUrlVerification, webhookDeliveryId, webhookEventType } from "../events.ts";
import { readWebhookBody } from "../read-body.ts";
import { buildWebhookTriggerData } from "../trigger-data.ts";
import { checkAccess } from "./access.ts";
import { answerDeliveryError } from "./answers.ts";

/** One delivery as the HTTP route hands it over. */
export interface IncomingDelivery {
  request: Request;
  webhookId: string;
  /** The request id, logged with a delivery that could not be recorded. */
  requestId?: string;
  /** Holds the connection open while wait mode waits (see RequestInfo). */
  holdOpen: RequestInfo["holdOpen"];
}

const notFound = () => jsonAnswer(404, { error: "webhook not found" });

/** Webhook ids are 128 random bits in hex (flows.ts); anything else names no flow and never reaches the database. */
const WEBHOOK_ID = /^[0-9a-f]{32}$/;

/**
 * `POST {webhook_url}/<webhook_id>`: a delivery from an external service, taken through
 * every check before a run starts (architecture, "A webhook's life"):
 *
 * 1. only POST (405); a live, active flow with that webhook id (404); within the account's
 *    deliveries per second per flow (429 with Retry-After);
 * 2. the body read up to WEBHOOK_MAX_BYTES (413), kept raw for the signature;
 * 3. access: public, an API key of the flow's account, or the service's signature (401,
 *    counted in `webhooks.rejected`, nothing recorded or started);
 * 4. the body parsed by its content type (415, 400; a service that posts JSON takes only JSON);
 *    Slack's URL verification answered;
 * 5. the event type against the trigger's filter: filtered deliveries are recorded as
 *    `filtered` runs and answered `run_id: null`;
 * 6. the delivery id de-duplicated within the flow's window (the first run's id again);
 * 7. the run recorded and queued before the answer (acknowledge), or awaited (wait).
 *
 * While the database or the Broker cannot take the delivery, the answer is 503 with
 * Retry-After: never 200 for an event that was not recorded.
 */
export async function receiveWebhook(services: Services, delivery: IncomingDelivery): Promise<Response> {
  const { request, webhookId, requestId } = delivery;
  if (request.method !== "POST") {
    return jsonAnswer(405, { error: "webhooks accept POST only" }, { allow: "POST" });
  }
  if (!WEBHOOK_ID.test(webhookId)) return notFound();
  let flow: WebhookFlow | null;
  try {
    flow = await findFlowByWebhookId(services, webhookId);
  } catch (error) {
    return answerDeliveryError(services.logger, error, requestId);
  }
  if (!flow?.active) return notFound();
  try {
    return await take(services, flow, delivery);
  } catch (error) {
    return answerDeliveryError(services.logger, error, requestId);
  }
}

async function take(services: Services, flow: WebhookFlow, { request, webhookId, holdOpen }: IncomingDelivery) {
  const { config, metrics } = services;
  // Before the body is read: a flood costs its sender a 429, not the platform a parse.
  await services.limits.spend(flow.accountId, "webhook_deliveries_per_second", flow.flowId);
  const rawBody = await readWebhookBody(request, config.webhooks.maxBytes);
  const receivedAt = new Date();
  const url = new URL(request.url);
  metrics.count(flow.accountId, "webhooks.received");
  const access = await checkAccess(services, flow, {
    headers: request.headers,
    rawBody,
    publicUrl: `${config.webhookBaseUrl}/${webhookId}${url.search}`,
    path: url.pathname,
    queryApiKey: url.searchParams.get("api_key"),
    receivedAt,
  });
  if (!access.ok) {
    metrics.count(flow.accountId, "webhooks.rejected");
    return jsonAnswer(401, { error: access.message });
  }
  const contentType = request.headers.get("content-type");
  const bodyProblem = serviceBodyProblem(flow.trigger.service, contentType, rawBody.byteLength);
  if (bodyProblem) throw new DomainError("unsupported_media_type", bodyProblem);
  const { fields } = await parseWebhookBody(rawBody, contentType, {
    maxFileContentBytes: config.webhooks.maxFileContentBytes,
  });
  const { trigger } = flow;
  const challenge = slackUrlVerification(trigger.service, fields);
  if (challenge) return jsonAnswer(200, challenge);

  const parts = { headers: request.headers, body: fields };
  const data = buildWebhookTriggerData({
    body: fields,
    headers: request.headers,
    webhookId,
    receivedAt,
    omitHeaders: access.omitHeaders,
  });
  const run = { accountId: flow.accountId, flowId: flow.flowId, trigger: data };
  const eventType = webhookEventType(trigger.service, parts);
  if (trigger.events.length > 0 && (eventType === null || !trigger.events.includes(eventType))) {
    await services.runs.recordFiltered(run);
    return jsonAnswer(200, { message: "accepted", run_id: null });
  }
  const deliveryId =
    trigger.dedup_window_s > 0 ? webhookDeliveryId(trigger.service, parts, trigger.delivery_id_field) : null;
  const start = {
    ...run,
    deliveryId: deliveryId ?? undefined,
    via: "webhook" as const,
    traceparent: request.headers.get("traceparent"),
  };
  if (trigger.response_mode === "wait") {
    holdOpen(config.runs.waitTimeoutMs);
    return outcomeResponse(await services.runs.startAndWait(start, config.runs.waitTimeoutMs), "public");
  }
  const { runId } = await services.runs.start(start);
  return jsonAnswer(200, { message: "accepted", run_id: runId });
}

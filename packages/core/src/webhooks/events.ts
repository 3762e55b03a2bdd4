import { indexedKey } from "../indexed-key.ts";
import { isJsonMediaType, mediaTypeOf } from "./media-type.ts";
import type { WebhookService } from "./schemas.ts";

/**
 * Reading a delivery's event type and delivery id where each sender puts them
 * (`../shared/design/api.md`, "Flows and runs"). `body` is the parsed body's fields.
 */
export interface DeliveryParts {
  headers: Headers;
  body: Record<string, unknown>;
}

/** Event types are compared with a trigger's filter; longer values match no filter entry and count as absent. */
export const MAX_EVENT_TYPE_LENGTH = 200;

/**
 * Stripe: the body's `type`; GitHub: `X-GitHub-Event` (`push`, `pull_request`: the
 * body's `action` is not appended); Slack: `event.type` of an event callback, else
 * `type` (`url_verification`); Shopify: `X-Shopify-Topic` (`orders/create`); any other
 * service, or none: the body's `event`, else its `type`. Null when there is none.
 */
export function webhookEventType(service: WebhookService | null | undefined, parts: DeliveryParts): string | null {
  const found = eventTypeOf(service, parts);
  return found && found.length <= MAX_EVENT_TYPE_LENGTH ? found : null;
}

function eventTypeOf(service: WebhookService | null | undefined, { headers, body }: DeliveryParts): string | null {
  switch (service) {
    case "stripe":
      return text(readPath(body, "type"));
    case "github":
      return headers.get("x-github-event");
    case "slack":
      return text(readPath(body, "event.type")) ?? text(readPath(body, "type"));
    case "shopify":
      return headers.get("x-shopify-topic");
    default:
      return text(readPath(body, "event")) ?? text(readPath(body, "type"));
  }
}

/**
 * The id a sender keeps across retries of one event: Stripe's event `id`,
 * `X-GitHub-Delivery`, Slack's `event_id`, `X-Shopify-Webhook-Id`,
 * `I-Twilio-Idempotency-Token`, Standard Webhooks' `webhook-id` (or `svix-id`). When the
 * service defines none or the delivery lacks it, the body field at `idField` (a dot
 * path, see `deliveryIdField`), if configured. Null when there is none: no de-duplication.
 * Ids key de-duplication in an indexed column: a long one is kept as its digest (`indexedKey`).
 */
export function webhookDeliveryId(
  service: WebhookService | null | undefined,
  parts: DeliveryParts,
  idField?: string | null,
): string | null {
  const id = ownDeliveryId(service, parts)?.trim() || (idField ? text(readPath(parts.body, idField))?.trim() : null);
  if (!id) return null;
  return indexedKey(id);
}

function ownDeliveryId(service: WebhookService | null | undefined, { headers, body }: DeliveryParts): string | null {
  switch (service) {
    case "stripe":
      return text(readPath(body, "id"));
    case "github":
      return headers.get("x-github-delivery");
    case "slack":
      return text(readPath(body, "event_id"));
    case "shopify":
      return headers.get("x-shopify-webhook-id");
    case "twilio":
      return headers.get("i-twilio-idempotency-token");
    case "standard":
      return headers.get("webhook-id") ?? headers.get("svix-id");
    default:
      return null;
  }
}

/**
 * Services whose scheme fixes the body's type: Stripe, GitHub (its webhooks are set to
 * `application/json`), Slack's Events API and Standard Webhooks post JSON, and their
 * event types and ids are read from it. The same signed bytes sent as a form would parse
 * into other fields (no event id, so no de-duplication): a replay must not be read anew.
 */
const JSON_ONLY_SERVICES: ReadonlySet<WebhookService> = new Set(["stripe", "github", "slack", "standard"]);

/** Why a delivery's body cannot be what its service sends (a 415), or null. An empty body has no type. */
export function serviceBodyProblem(
  service: WebhookService | null | undefined,
  contentType: string | null,
  bodyBytes: number,
): string | null {
  if (!service || !JSON_ONLY_SERVICES.has(service) || bodyBytes === 0) return null;
  const type = mediaTypeOf(contentType);
  return isJsonMediaType(type)
    ? null
    : `${service} deliveries are JSON: content type ${type || "(none)"} is not accepted`;
}

/**
 * Slack checks a new Events API URL by posting `{type: "url_verification", challenge}`
 * (signed like any event); the answer is `{challenge}` with 200. Null for anything else.
 * Verify the signature first: an unsigned challenge must not be echoed.
 */
export function slackUrlVerification(
  service: WebhookService | null | undefined,
  body: Record<string, unknown>,
): { challenge: string } | null {
  if (service !== "slack" || readPath(body, "type") !== "url_verification") return null;
  const challenge = text(readPath(body, "challenge"));
  return challenge ? { challenge } : null;
}

/** A field at a dot path, through own properties only (`constructor` is not a field). */
function readPath(body: Record<string, unknown>, path: string): unknown {
  let current: unknown = body;
  for (const key of path.split(".")) {
    if (typeof current !== "object" || current === null || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** Ids and types are strings; a number (a form of id some senders use) reads as its decimal text. */
function text(value: unknown): string | null {
  if (typeof value === "string") return value || null;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  return null;
}

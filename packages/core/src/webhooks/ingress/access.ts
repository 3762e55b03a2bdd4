import { DomainError } from "../../errors.ts";
import type { WebhookFlow } from "../../flows/webhook-flows.ts";
import type { Services } from "../../services.ts";
import { verifyWebhookSignature } from "../signatures/index.ts";

export interface Delivery {
  headers: Headers;
  rawBody: Uint8Array;
  /** The URL the sender posted to, as the sender knows it (WEBHOOK_BASE_URL), query included. */
  publicUrl: string;
  /** The path the delivery reached here (`/webhooks/<id>`), which API keys restricted to paths are checked against. */
  path: string;
  /** The query string's `api_key`, when the sender put the key there. */
  queryApiKey: string | null;
  receivedAt: Date;
}

/** Let in, with the headers that carried the platform's own credential (kept out of the trigger data); or refused, saying why. */
export type AccessDecision = { ok: true; omitHeaders: string[] } | { ok: false; message: string };

/**
 * Checks a delivery against the flow's `trigger.access`: anyone (`public`), an API key of
 * the flow's own account (`api_key`: query `api_key` or header `X-Api-Key`), or the
 * service's signature over the raw body (`signature`, compared in constant time).
 */
export async function checkAccess(
  deps: Pick<Services, "authenticate">,
  flow: WebhookFlow,
  delivery: Delivery,
): Promise<AccessDecision> {
  const { trigger } = flow;
  if (trigger.access === "public") return { ok: true, omitHeaders: [] };
  if (trigger.access === "api_key") {
    const key = delivery.headers.get("x-api-key")?.trim() || delivery.queryApiKey;
    if (!key) return { ok: false, message: "missing API key: send it in X-Api-Key or the api_key query parameter" };
    const principal = await deps
      .authenticate({ scheme: "api_key", key }, { method: "POST", path: delivery.path })
      .catch((error: unknown) => (error instanceof DomainError && error.code === "forbidden" ? error : null));
    // A key of the account restricted to other paths is told so, rather than called invalid.
    if (principal instanceof DomainError) return { ok: false, message: principal.message };
    if (principal?.accountId !== flow.accountId) return { ok: false, message: "invalid API key" };
    return { ok: true, omitHeaders: ["x-api-key"] };
  }
  if (!trigger.service || flow.signingSecret === null) return { ok: false, message: "the flow has no signing secret" };
  const config =
    trigger.service === "custom"
      ? trigger.hmac
        ? { service: "custom" as const, secret: flow.signingSecret, hmac: trigger.hmac }
        : null
      : { service: trigger.service, secret: flow.signingSecret };
  if (!config) return { ok: false, message: "the flow has no HMAC settings" };
  const check = verifyWebhookSignature(config, {
    headers: delivery.headers,
    rawBody: delivery.rawBody,
    url: delivery.publicUrl,
    now: delivery.receivedAt,
  });
  return check.ok ? { ok: true, omitHeaders: [] } : { ok: false, message: check.message };
}

import { receiveWebhook, type Services } from "@platform/core";

/** `{webhook_url}/<webhook_id>`: the webhook ingress (packages/core/src/webhooks/ingress). */
export function webhookIngress(services: Services, request: Request, webhookId: string): Promise<Response> {
  return receiveWebhook(services, { request, webhookId });
}

/**
 * `{webhook_url}/<webhook_id>`: the webhook ingress. No flow can be defined yet, so no
 * webhook id exists and every trigger is unknown; only POST is a trigger.
 */
export function webhookIngress(request: Request): Response {
  if (request.method !== "POST") {
    return Response.json({ error: "webhooks accept POST only" }, { status: 405, headers: { allow: "POST" } });
  }
  return Response.json({ error: "webhook not found" }, { status: 404 });
}

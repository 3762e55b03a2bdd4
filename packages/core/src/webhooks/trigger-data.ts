/**
 * What a flow sees under `trigger` (spec, "Webhook trigger endpoint"): the body's fields
 * at the top level, then `headers` (names lower-case; repeated headers joined with
 * ", "), `webhook_id` and `received_at` (ISO 8601). The platform's own fields win over
 * body fields of the same name, so a sender cannot forge `webhook_id` or `received_at`.
 */
export interface TriggerDataParts {
  body: Record<string, unknown>;
  headers: Headers;
  webhookId: string;
  receivedAt: Date;
  /** Header names left out, e.g. `x-api-key` when it carried the platform's own credential. */
  omitHeaders?: readonly string[];
}

export function buildWebhookTriggerData(parts: TriggerDataParts): Record<string, unknown> {
  const omitted = new Set(parts.omitHeaders?.map((name) => name.toLowerCase()));
  const headers = Object.fromEntries([...parts.headers].filter(([name]) => !omitted.has(name)));
  return { ...parts.body, headers, webhook_id: parts.webhookId, received_at: parts.receivedAt.toISOString() };
}

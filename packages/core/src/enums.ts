/**
 * The closed sets of words the API speaks in, written once. The zod schemas are built from
 * them, and `@platform/client` ships them to its users (the console's status filter, its
 * service and method choices): this module imports nothing, so the client bundles it
 * without any of the server's code. The order is the OpenAPI document's.
 */

/** Every status a run can have. */
export const RUN_STATUSES = [
  "queued",
  "running",
  "succeeded",
  "failed",
  "cancelled",
  "filtered",
  "duplicate",
  "rejected",
  "skipped",
  "batched",
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** The statuses after which nothing more happens to a run. */
export const FINAL_RUN_STATUSES = [
  "succeeded",
  "failed",
  "cancelled",
  "filtered",
  "duplicate",
  "rejected",
  "skipped",
  "batched",
] as const satisfies readonly RunStatus[];

/** Who signs a webhook's deliveries (`trigger.service`); `custom` needs `hmac`. */
export const WEBHOOK_SERVICES = ["stripe", "github", "slack", "shopify", "twilio", "standard", "custom"] as const;

/** The methods a gateway mapping answers. */
export const GATEWAY_METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"] as const;

import * as words from "@platform/core/enums";

/**
 * The closed sets of values the API takes and answers, to build choices from (a status
 * filter, a service picker) with the words the server checks. Written once, in the server's
 * `enums.ts`; the build copies the values into the package.
 */

/** Every status a run can have. */
export const RUN_STATUSES = words.RUN_STATUSES;
/** The statuses after which nothing more happens to a run. */
export const FINAL_RUN_STATUSES = words.FINAL_RUN_STATUSES;
/** Who signs a webhook's deliveries (`trigger.service`); `custom` needs `hmac`. */
export const WEBHOOK_SERVICES = words.WEBHOOK_SERVICES;
/** The methods a gateway mapping answers. */
export const GATEWAY_METHODS = words.GATEWAY_METHODS;

export type RunStatus = (typeof RUN_STATUSES)[number];
export type WebhookService = (typeof WEBHOOK_SERVICES)[number];
export type GatewayMethod = (typeof GATEWAY_METHODS)[number];

/** Whether nothing more happens to a run of this status. */
export const isFinalRunStatus = (status: RunStatus): boolean =>
  (FINAL_RUN_STATUSES as readonly RunStatus[]).includes(status);

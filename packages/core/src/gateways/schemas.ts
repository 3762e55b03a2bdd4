import { z } from "zod";
import { GATEWAY_METHODS } from "../enums.ts";
import { bodyInteger, pathParam } from "../schemas.ts";
import { describeRouteProblem } from "./routes.ts";

export const HTTP_METHODS = GATEWAY_METHODS;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** What a gateway gets for what its creator leaves out. */
export const GATEWAY_DEFAULTS = { timeout: 30_000, limit: { request: 1000, time: 1 }, type: "http" } as const;
/** `request` is bounded because the limiter keeps one entry per admitted request in the window. */
export const GATEWAY_LIMITS = { timeout: 300_000, request: 10_000, time: 86_400 } as const;

/** A topic is a URL path segment of its own: letters, digits, `_`, `-` and `.`, not starting with `.`. */
const TOPIC = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$/;
const topicRule = "1-64 letters, digits, _, - or ., not starting with .";

const topic = z
  .string()
  .regex(TOPIC, { error: `must be ${topicRule}` })
  .meta({ description: `The gateway's topic (${topicRule}); its URL ends with it.` });

const name = z.string().min(1, { error: "must not be empty" }).max(200, { error: "must be at most 200 characters" });
const description = z.string().max(2000, { error: "must be at most 2000 characters" });
/** Piped so the REST adapter does not coerce it (`"false"` would become true). */
const active = z.boolean({ error: "must be true or false" }).pipe(z.boolean());
const timeout = bodyInteger(1, GATEWAY_LIMITS.timeout).meta({
  description: `Milliseconds a request waits for its run (1-${GATEWAY_LIMITS.timeout}; default ${GATEWAY_DEFAULTS.timeout}); 504 beyond.`,
});
const limit = z
  .object({
    request: bodyInteger(1, GATEWAY_LIMITS.request).meta({
      description: `Requests allowed in any window (1-${GATEWAY_LIMITS.request}).`,
    }),
    time: bodyInteger(1, GATEWAY_LIMITS.time).meta({
      description: `Length of the window in seconds (1-${GATEWAY_LIMITS.time}).`,
    }),
  })
  .meta({
    description: `At most \`request\` requests in any \`time\` seconds, across every API process; 429 with Retry-After beyond (default ${GATEWAY_DEFAULTS.limit.request} per ${GATEWAY_DEFAULTS.limit.time} s).`,
  });
const type = z
  .literal("http", { error: 'must be "http"' })
  .meta({ description: "The kind of gateway; `http` is the only one (default)." });

export const createGatewayInput = z.object({
  name,
  description: description.default(""),
  subject: topic.optional().meta({ description: `The gateway's topic (${topicRule}); generated when absent.` }),
  active: active.default(true),
  timeout: timeout.default(GATEWAY_DEFAULTS.timeout),
  limit: limit.default({ ...GATEWAY_DEFAULTS.limit }),
  type: type.default(GATEWAY_DEFAULTS.type),
});
export type CreateGatewayInput = z.infer<typeof createGatewayInput>;

export const topicInput = z.object({ gateway_topic: pathParam("Topic of the gateway.") });

/** Every field but `subject` and `url`, each optional; naming one of those two is refused. */
export const updateGatewayInput = topicInput.extend({
  name: name.optional(),
  description: description.optional(),
  active: active.optional(),
  timeout: timeout.optional(),
  limit: limit.optional(),
  type: type.optional(),
  subject: z.never({ error: "cannot be changed" }).optional(),
  url: z.never({ error: "cannot be changed" }).optional(),
});
export type UpdateGatewayInput = z.infer<typeof updateGatewayInput>;

export const gateway = z
  .object({
    name: z.string(),
    description: z.string(),
    url: z.string().meta({ description: "Public address of the gateway: GATEWAY_BASE_URL/<subject>." }),
    subject: z.string().meta({ description: "The gateway topic." }),
    active: z.boolean(),
    timeout: z.number().int().meta({ description: "Milliseconds." }),
    limit: z.object({
      request: z.number().int().meta({ description: "Requests allowed per window." }),
      time: z.number().int().meta({ description: "Window length in seconds." }),
    }),
    modified: z.number().int().meta({ description: "Unix time in seconds." }),
    type: z.string(),
  })
  .meta({ id: "Gateway" });
export type Gateway = z.infer<typeof gateway>;

export const gatewayOutput = z.object({ body: gateway, metadata: z.object({ subject: z.string() }) });

const method = z.enum(HTTP_METHODS, { error: `must be one of ${HTTP_METHODS.join(", ")}` });

const mappingPath = z
  .string()
  .superRefine((value, ctx) => {
    const problem = describeRouteProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  })
  .meta({
    description:
      "URL path below the gateway's address, with the leading slash: segments of letters, digits, `-`, `.`, `_` or `~`, or parameters `:name` (`/orders/:id`).",
  });

export const mapping = z
  .object({
    method: z.enum(HTTP_METHODS),
    path: z.string(),
    flow_id: z.string().meta({ description: "The flow a matching request runs." }),
  })
  .meta({ id: "GatewayMapping" });
export type Mapping = z.infer<typeof mapping>;

export const createMappingInput = topicInput.extend({
  method: method.meta({ description: "HTTP method of the mapping." }),
  path: mappingPath,
  flow_id: z.uuid({ error: "must be a UUID" }).meta({ description: "A flow of the same account." }),
});

export const deleteMappingInput = topicInput.extend({
  method: method.meta({ description: "HTTP method of the mapping." }),
  path: z
    .string()
    .startsWith("/", { error: "must start with /" })
    .meta({ description: "URL path of the mapping as it was created, with the leading slash." }),
});

import { generateOpenApiDocument, type OpenAPIObject, type OpenApiMeta } from "trpc-to-openapi";
import { z } from "zod";
import { createDocument, type ZodOpenApiPathsObject } from "zod-openapi";
import type { CoreConfig } from "./config.ts";
import { gatewayIngressPaths } from "./gateways/openapi.ts";
import { appRouter } from "./router.ts";

const SPEC_VERSION = "0.1.1";

const errorSchema = { type: "object", required: ["error"], properties: { error: { type: "string" } } } as const;
const metricsErrorSchema = {
  type: "object",
  required: ["message", "data"],
  properties: { message: { type: "string" }, data: { type: "null" } },
} as const;

/** What a 400 for invalid input carries beside its text: each problem, where and what. */
const problemSchema = {
  type: "object",
  required: ["path", "message"],
  properties: {
    path: {
      type: "string",
      description:
        "The field, as a dotted path in the request's terms (`steps.2.payload.url`, a path or query parameter's name); empty for the input as a whole.",
    },
    message: { type: "string", description: "What is wrong with it." },
  },
} as const;
const problems = {
  type: "array",
  description:
    "What is wrong with the input, field by field (the same problems `error` lists as text). Absent when the refusal names no field.",
  items: { $ref: "#/components/schemas/Problem" },
} as const;

const description = `Workflow and integration platform API (spec version ${SPEC_VERSION}).

Errors answer \`{"error": string}\`; the metrics endpoint answers \`{"message": string, "data": null}\`.
Statuses: 400 invalid input, 401 missing or bad credential, 403 not allowed, 404 missing, 409 conflict,
413 body too large (limit set by MAX_BODY_BYTES, default 10 MiB), 415 unsupported content type,
431 request line and headers over 16 KiB (answered by the HTTP server itself, without a body),
429 rate limited (with Retry-After), 500 internal, 501 not implemented yet, 502 upstream unusable, 503 dependency down.

Where the spec is silent (input refused before anything runs, DELETE bodies, empty bodies, query
booleans, units of durations, ...), the choices made are listed in the repository's \`docs/decisions.md\`.`;

/** The webhook ingress is a plain route (it needs the raw bytes), so it is described by hand. */
function webhookPaths(webhookBaseUrl: string): ZodOpenApiPathsObject {
  return {
    "/webhooks/{webhook_id}": {
      servers: [{ url: webhookBaseUrl.replace(/\/webhooks$/, "") }],
      post: {
        operationId: "triggerWebhook",
        tags: ["webhooks"],
        summary: "Start a flow from an external service",
        description:
          "Accepts application/json, application/x-www-form-urlencoded and multipart/form-data. " +
          "Acknowledge mode answers 200 at once; wait mode answers when the flow ends. " +
          "A trigger secured by API key takes it as the query parameter `api_key` or the header `X-Api-Key`.",
        requestParams: {
          path: z.object({ webhook_id: z.string() }),
          query: z.object({ api_key: z.string().optional() }),
        },
        responses: {
          "200": {
            description: "Accepted",
            content: {
              "application/json": {
                schema: z.object({ message: z.string(), run_id: z.string().nullable() }),
              },
            },
          },
          "401": { description: "Signature or API key rejected" },
          "404": { description: "No webhook with this id" },
          "413": { description: "Body too large" },
          "415": { description: "Unsupported content type" },
        },
      },
    },
  };
}

/** `POST /flows/{id}/runs` is a plain route (wait mode answers with the flow's own status and headers). */
function startRunPaths(): ZodOpenApiPathsObject {
  const outcome = (description: string, schema: z.ZodType) => ({
    description,
    content: { "application/json": { schema } },
  });
  return {
    "/flows/{id}/runs": {
      post: {
        operationId: "runs-startByHand",
        tags: ["runs"],
        summary: "Start a run by hand (send a test event)",
        description:
          "The JSON body is the trigger data, as a webhook's body fields would be (an empty body is `{}`). " +
          'Answers 200 `{message: "accepted", run_id}` once the run is recorded and queued. With `wait=true`, answers ' +
          "what the webhook's wait mode answers: the `respond` step's status, headers and body (a string body as text, " +
          "anything else as JSON, sandboxed: `Content-Security-Policy: sandbox`, `nosniff`), else 200 with the last step's output; 500 `{error, run_id}` when the run fails (the account's own call hears the error, redacted of secrets; webhooks and gateways answer `the flow failed`); " +
          "202 `{run_id}` when it is still running after WAIT_TIMEOUT_MS (default 30 s). A flow the account does not " +
          "have is 404 `flow not found`; a body that is not a JSON object is 400.",
        security: [{ bearerAuth: [] }, { apiKey: [] }],
        requestParams: {
          path: z.object({ id: z.uuid().meta({ description: "Id of the flow (a UUID)." }) }),
          query: z.object({
            wait: z.enum(["true", "false", "1", "0"]).optional().meta({ description: "Wait for the run's end." }),
          }),
        },
        requestBody: {
          content: {
            "application/json": { schema: z.record(z.string(), z.unknown()).meta({ description: "Trigger data." }) },
          },
        },
        responses: {
          "200": outcome(
            "Accepted; in wait mode, the last step's output (any JSON) or the `respond` step's answer",
            z.union([
              z.object({ message: z.literal("accepted"), run_id: z.string() }),
              z.unknown().meta({ description: "Wait mode: the run's output, as the flow made it." }),
            ]),
          ),
          "202": outcome("Wait mode: still running", z.object({ run_id: z.string() })),
          "400": { description: "Invalid input" },
          "401": { description: "Credential missing or invalid" },
          "403": { description: "Not allowed" },
          "404": { description: "No such flow" },
          "415": { description: "A body that is not application/json" },
          "500": outcome("Wait mode: the run failed", z.object({ error: z.string(), run_id: z.string() })),
          default: { description: "Wait mode: the `respond` step's own status, headers and body (any content type)." },
        },
      },
    },
  };
}

/** The document's tags, in the order the reference shows them. */
const TAGS = {
  accounts: "Sign-up, sessions, second factors, users and invitations, API keys, prices and usage.",
  hub: "Node templates, and the mirror of the public MCP registry.",
  flows: "Flows: a trigger and the steps it runs, saved as immutable revisions.",
  runs: "Runs of flows: started by webhooks, gateways or by hand, and their records.",
  monitoring: "The account's live metrics.",
  storage: "Streams of messages and key-value buckets, per account.",
  gateway: "Public HTTP addresses whose mappings run flows.",
  secrets: "Values flows name as `{{secrets.<key>}}`, sealed at rest.",
  webhooks: "Deliveries from external services that start flows.",
};

/**
 * The OpenAPI document, generated from the routers once per process. Error responses
 * are rewritten into the spec's shapes: the generator's defaults describe tRPC's own.
 */
export function buildOpenApiDocument(config: Pick<CoreConfig, "publicUrl" | "webhookBaseUrl">): OpenAPIObject {
  const document = generateOpenApiDocument(appRouter, {
    title: "Workflow Platform API",
    description,
    version: SPEC_VERSION,
    baseUrl: config.publicUrl,
    docsUrl: `${config.publicUrl}/docs`,
    tags: Object.keys(TAGS),
    securitySchemes: {
      bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "auth_token from sign-in" },
      apiKey: { type: "apiKey", in: "header", name: "X-Api-Key", description: "An account API key" },
    },
  });
  document.info.license = { name: "Proprietary", identifier: "LicenseRef-Proprietary" };
  document.tags = Object.entries(TAGS).map(([name, tagDescription]) => ({ name, description: tagDescription }));
  const byHand = createDocument({
    openapi: "3.1.0",
    info: { title: "", version: "" },
    paths: { ...webhookPaths(config.webhookBaseUrl), ...startRunPaths(), ...gatewayIngressPaths() },
  });
  const paths: Record<string, object> = { ...document.paths };
  // Merged per method: a hand-described operation may share its path with generated ones.
  for (const [path, item] of Object.entries(byHand.paths ?? {})) paths[path] = { ...paths[path], ...item };
  document.paths = paths as OpenAPIObject["paths"];
  document.components = {
    ...document.components,
    schemas: {
      ...Object.fromEntries(
        Object.entries(document.components?.schemas ?? {}).filter(([name]) => !name.startsWith("error.")),
      ),
      ...byHand.components?.schemas,
      Error: { ...errorSchema, required: [...errorSchema.required] },
      MetricsError: { ...metricsErrorSchema, required: [...metricsErrorSchema.required] },
      ValidationError: {
        ...errorSchema,
        required: [...errorSchema.required],
        properties: { ...errorSchema.properties, problems },
      },
      MetricsValidationError: {
        ...metricsErrorSchema,
        required: [...metricsErrorSchema.required],
        properties: { ...metricsErrorSchema.properties, problems },
      },
      Problem: { ...problemSchema, required: [...problemSchema.required] },
    },
  };
  const ownErrors = errorDescriptions();
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    const metrics = path.startsWith("/monitoring");
    const errorRef = { $ref: `#/components/schemas/${metrics ? "MetricsError" : "Error"}` };
    // A 400 is invalid input, which may name its problems.
    const invalidRef = { $ref: `#/components/schemas/${metrics ? "MetricsValidationError" : "ValidationError"}` };
    for (const [method, operation] of Object.entries(
      item as Record<
        string,
        { security?: unknown[]; responses?: Record<string, { description: string; content?: unknown }> }
      >,
    )) {
      if (!operation || typeof operation !== "object" || !operation.responses) continue;
      // An operation that names no scheme takes no credential: say so, rather than leave it unsaid.
      operation.security ??= [];
      for (const [status, response] of Object.entries(operation.responses)) {
        // The generator shares one response object between operations: replace, never mutate.
        if (Number(status) >= 400) {
          operation.responses[status] = {
            description: ownErrors.get(`${method.toUpperCase()} ${path}`)?.[status] ?? response.description,
            content: { "application/json": { schema: status === "400" ? invalidRef : errorRef } },
          };
        }
      }
    }
  }
  return document;
}

/**
 * Each operation's `errorResponses` texts, by `METHOD path`. The generator keeps the first
 * text it meets for a status and gives it to every operation (a storage 404 would read
 * "No such user in this account"), so the document takes them from the routers again.
 */
function errorDescriptions(): Map<string, Record<string, string>> {
  const described = new Map<string, Record<string, string>>();
  for (const procedure of Object.values(appRouter._def.procedures)) {
    const openapi = (procedure as unknown as { _def: { meta?: OpenApiMeta } })._def.meta?.openapi;
    if (openapi?.errorResponses && !Array.isArray(openapi.errorResponses)) {
      described.set(`${openapi.method} ${openapi.path}`, openapi.errorResponses as Record<string, string>);
    }
  }
  return described;
}

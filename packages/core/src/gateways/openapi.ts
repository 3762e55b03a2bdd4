import { z } from "zod";
import type { ZodOpenApiOperationObject, ZodOpenApiPathsObject } from "zod-openapi";

const answer = (description: string, schema?: z.ZodType) => ({
  description,
  ...(schema && { content: { "application/json": { schema } } }),
});
const error = z.object({ error: z.string() });
const runError = z.object({ error: z.string(), run_id: z.string() });

function operation(method: string): ZodOpenApiOperationObject {
  return {
    operationId: `gateway-request-${method}`,
    tags: ["gateway"],
    summary: `${method.toUpperCase()} through a gateway`,
    description:
      "A gateway's own address: `{gateway_url}<path>`, GATEWAY_BASE_URL/<subject><path> (by default PUBLIC_URL/gw/<subject><path>; this server answers it at `/gw/`). " +
      "Every method of the seven (GET, POST, PUT, DELETE, PATCH, OPTIONS, HEAD) is accepted; the request runs the flow of the mapping with its method and path (parameters `:name` match one segment each; one trailing slash is ignored) and waits for it. " +
      "The flow's trigger data holds the body fields (application/json, application/x-www-form-urlencoded or multipart/form-data, as a webhook's; WEBHOOK_MAX_BYTES at most) and, over them, `method`, `path` (below the gateway, as sent), `query` (a string per name, an array when repeated), `headers` (names lower-case), `params` (decoded), `gateway` (the subject) and `received_at`. " +
      "It answers the `respond` step's status, headers and body, else 200 with the last step's output. " +
      "Its headers are those on the allow list of tenant answers (content, caching, CORS, Location, Retry-After, Content-Security-Policy beside the platform's `sandbox`, the flow's own `x-` headers; docs/security.md): any other is dropped. " +
      "The gateway's `limit` (at most `request` requests in any `time` seconds, exact across API processes) answers 429 with Retry-After beyond it; requests that match no mapping do not count against it. No credential is asked: the flow decides what to accept.",
    requestParams: {
      path: z.object({
        gateway_topic: z.string().meta({ description: "The gateway's subject." }),
        path: z.string().meta({ description: "The rest of the path, any number of segments." }),
      }),
    },
    responses: {
      "200": answer("The flow's answer (status, headers and body as its respond step set them)"),
      "400": answer("A body that is not valid for its content type", error),
      "404": answer(
        "No live gateway (`The requested resource does not exist`), or no mapping of the method and path",
        error,
      ),
      "413": answer("Body over WEBHOOK_MAX_BYTES", error),
      "415": answer("Unsupported content type", error),
      "429": answer("Over the gateway's limit; Retry-After says when to try again", error),
      "500": answer("The run failed", runError),
      "503": answer("The gateway is inactive", error),
      "504": answer("The run did not end within the gateway's timeout; it goes on and keeps its record", runError),
    },
  };
}

/** The data plane is a plain route (it answers with the flows' own statuses and headers), so it is described by hand. */
export function gatewayIngressPaths(): ZodOpenApiPathsObject {
  return {
    "/gw/{gateway_topic}/{path}": {
      get: operation("get"),
      post: operation("post"),
      put: operation("put"),
      patch: operation("patch"),
      delete: operation("delete"),
    },
  };
}

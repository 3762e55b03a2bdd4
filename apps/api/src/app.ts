import {
  type AppRouter,
  createContext,
  handleGatewayRequest,
  handleMcpRequest,
  receiveWebhook,
  type Services,
  startRunByHand,
} from "@platform/core";
import { Elysia } from "elysia";
import type { OpenAPIObject } from "trpc-to-openapi";
import type { ConsoleAssets } from "./console/assets.ts";
import { createConsoleSession } from "./console/session.ts";
import { docsAsset, docsPage } from "./docs.ts";
import type { HttpMetrics } from "./metrics.ts";
import { readiness } from "./readiness.ts";
import { attachRequestMeta, requestMeta } from "./request-meta.ts";
import { createRestHandler } from "./rest.ts";
import { createTrpcHandler } from "./trpc-endpoint.ts";

/** API answers are per caller and may carry tokens or keys: no cache may keep them. */
async function uncached(response: Promise<Response>): Promise<Response> {
  const answered = await response;
  answered.headers.set("cache-control", "no-store");
  return answered;
}

/** The GET a HEAD stands for, known to the routes by the same request id, address and path. */
function asGet(head: Request): Request {
  const get = new Request(head.url, { method: "GET", headers: head.headers, signal: head.signal });
  attachRequestMeta(get, requestMeta(head));
  return get;
}

/**
 * Elysia looks for the path from the 12th character of the URL on (`http://` and a host
 * of at least four), so a request whose Host is shorter (`Host: api`) would be routed by a
 * later segment of its path: `/webhooks/<id>` served as `/<id>`. Such a request is routed
 * under a host long enough; the routes read the path and query, never the host.
 */
function routable(request: Request): Request {
  const hostEnd = request.url.indexOf("/", request.url.indexOf("//") + 2);
  if (hostEnd >= 11) return request;
  const rehosted = new Request(`http://localhost${request.url.slice(hostEnd)}`, request);
  attachRequestMeta(rehosted, requestMeta(request));
  return rehosted;
}

export interface AppDependencies {
  services: Services;
  router: AppRouter;
  openapi: OpenAPIObject;
  metrics: HttpMetrics;
  /** The console's build, served at `/console`. */
  consolePages: ConsoleAssets;
}

/**
 * The routes, as one fetch handler. Operational and ingress routes are plain Elysia routes;
 * every spec path falls through to the REST handler, which must stay last. Handlers that read the body
 * themselves are mounted with `parse: "none"` so Elysia leaves it unread.
 */
export function createApp({ services, router, openapi, metrics, consolePages }: AppDependencies) {
  const logger = services.logger;
  const rest = createRestHandler({ router, logger });
  const trpc = createTrpcHandler({ router, logger });
  const contextOf = (request: Request) => {
    const meta = requestMeta(request);
    return createContext(services, { ...meta, method: request.method, headers: request.headers });
  };
  const openapiJson = JSON.stringify(openapi);
  const session = createConsoleSession({
    router,
    contextOf,
    publicUrl: services.config.publicUrl,
    refreshTokenTtlSeconds: services.config.auth.refreshTokenTtlSeconds,
    logger,
  });

  const routes = new Elysia()
    .get("/healthz", () => Response.json({ status: "ok" }))
    .get("/readyz", () => readiness(services))
    .get("/metrics", async () => {
      const { body, contentType } = await metrics.render();
      return new Response(body, { headers: { "content-type": contentType } });
    })
    .get("/openapi.json", () => new Response(openapiJson, { headers: { "content-type": "application/json" } }))
    .get("/docs", ({ request }) => docsPage(request))
    .get("/docs/:asset", ({ params }) => docsAsset(params.asset))
    // The console: its pages live under /console, except the two links mails carry.
    .get("/", () => new Response(null, { status: 302, headers: { location: "/console" } }))
    .get("/console", ({ request }) => consolePages.page(request))
    .get("/console/*", ({ request }) => consolePages.page(request))
    .get("/invitations/accept", ({ request }) => consolePages.page(request))
    .get("/password/reset", ({ request }) => consolePages.page(request))
    .get("/console/assets/:name", ({ params, request }) =>
      consolePages.asset(params.name, request.headers.get("accept-encoding")),
    )
    .post("/console/session", ({ request }) => uncached(session.start(request)), { parse: "none" })
    .post("/console/session/refresh", ({ request }) => uncached(session.refresh(request)), { parse: "none" })
    .post("/console/session/end", ({ request }) => uncached(session.end(request)), { parse: "none" })
    .all(
      "/webhooks/:webhookId",
      ({ request, params }) => {
        const { id, holdOpen } = requestMeta(request);
        return receiveWebhook(services, { request, webhookId: params.webhookId, requestId: id, holdOpen });
      },
      { parse: "none" },
    )
    // The body is the trigger data and wait mode answers with the flow's own status and headers.
    .post(
      "/flows/:id/runs",
      ({ request, params }) => startRunByHand(services, request, requestMeta(request), params.id),
      {
        parse: "none",
      },
    )
    // The account's MCP endpoint (Streamable HTTP): its flows marked as tools, for MCP clients.
    .all("/mcp", ({ request }) => uncached(handleMcpRequest(services, request, requestMeta(request))), {
      parse: "none",
    })
    // Gateways answer with their flows' own status, headers and body, for any method.
    .all("/gw/*", ({ request }) => handleGatewayRequest(services, request, requestMeta(request)), {
      parse: "none",
    })
    .all("/trpc/*", ({ request }) => uncached(trpc(request, contextOf(request))), { parse: "none" })
    .all("/*", ({ request }) => uncached(rest(request, contextOf(request))), { parse: "none" });

  // HEAD answers as GET would: Bun sends the status and headers and leaves the body out.
  // Gateways are the exception: a mapping may name HEAD, and its flow decides the answer.
  return (incoming: Request): Promise<Response> => {
    const request = routable(incoming);
    return routes.handle(
      request.method === "HEAD" && !requestMeta(request).path.startsWith("/gw/") ? asGet(request) : request,
    );
  };
}

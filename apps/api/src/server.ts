import { appRouter, buildOpenApiDocument, type Services } from "@platform/core";
import { createApp } from "./app.ts";
import { clientAddress } from "./client-address.ts";
import { consoleAssets, DEFAULT_CONSOLE_DIR } from "./console/assets.ts";
import { withEdge } from "./edge.ts";
import { createRouteNamer, HttpMetrics } from "./metrics.ts";

export interface ServerOptions {
  port: number;
  host: string;
  maxBodyBytes: number;
  /** Reverse proxies in front whose X-Forwarded-For entries are believed (default 0). */
  trustedProxyHops?: number;
  /** The console's build (default: `apps/web/dist`, written by `bun run build:web`). */
  consoleDir?: string;
}

export interface RunningServer {
  /** The address it listens on, e.g. `http://127.0.0.1:3000`. */
  url: string;
  port: number;
  /**
   * Stops accepting connections and lets in-flight requests finish; connections still
   * open after `graceMs` are closed.
   */
  stop(graceMs: number): Promise<void>;
}

/** Serves the API on a real port. */
export function startServer(services: Services, options: ServerOptions): RunningServer {
  const openapi = buildOpenApiDocument(services.config);
  const metrics = new HttpMetrics();
  const consolePages = consoleAssets(options.consoleDir ?? DEFAULT_CONSOLE_DIR);
  const app = createApp({ services, router: appRouter, openapi, metrics, consolePages });
  const procedures = Object.keys(appRouter._def.procedures);
  const routeOf = createRouteNamer({ templates: Object.keys(openapi.paths ?? {}), procedures });
  const handle = withEdge(app, {
    logger: services.logger,
    metrics,
    routeOf,
    maxBodyBytes: options.maxBodyBytes,
  });
  const server = Bun.serve({
    port: options.port,
    hostname: options.host,
    // The edge answers oversized bodies with a JSON 413; Bun's own limit is only a backstop.
    maxRequestBodySize: options.maxBodyBytes * 2,
    fetch: (request, bunServer) => {
      const peer = bunServer.requestIP(request)?.address ?? "unknown";
      return handle(
        request,
        clientAddress(peer, request.headers.get("x-forwarded-for"), options.trustedProxyHops ?? 0),
      );
    },
  });
  const port = server.port ?? options.port;
  return {
    url: `http://${options.host === "0.0.0.0" ? "127.0.0.1" : options.host}:${port}`,
    port,
    async stop(graceMs) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const forced = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          services.logger.warn({ graceMs }, "closing connections still open after the grace period");
          void server.stop(true).then(resolve);
        }, graceMs);
      });
      await Promise.race([server.stop(false), forced]);
      clearTimeout(timer);
    },
  };
}

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
  /** Seconds a connection may stay silent, unless its request waits for a run (default: Bun's 10). */
  idleTimeoutSeconds?: number;
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

const BUN_IDLE_TIMEOUT_S = 10;
/** Seconds a held connection may stay silent past its request's wait. */
const HELD_MARGIN_S = 5;
/** Waits longer than this hold their connection without a limit of Bun's: the wait itself ends. */
const HELD_MAX_S = 240;

/** Seconds of silence a connection is allowed while its request waits `ms` (0: no limit). */
function heldSeconds(ms: number): number {
  const seconds = Math.ceil(ms / 1000) + HELD_MARGIN_S;
  return seconds > HELD_MAX_S ? 0 : seconds;
}

/** Serves the API on a real port. */
export function startServer(services: Services, options: ServerOptions): RunningServer {
  const openapi = buildOpenApiDocument(services.config);
  const metrics = new HttpMetrics();
  const consolePages = consoleAssets(options.consoleDir ?? DEFAULT_CONSOLE_DIR);
  const app = createApp({ services, router: appRouter, openapi, metrics, consolePages });
  const procedures = Object.keys(appRouter._def.procedures);
  const routeOf = createRouteNamer({ templates: Object.keys(openapi.paths ?? {}), procedures });
  const idleTimeout = options.idleTimeoutSeconds ?? BUN_IDLE_TIMEOUT_S;
  const handle = withEdge(app, {
    logger: services.logger,
    metrics,
    routeOf,
    maxBodyBytes: options.maxBodyBytes,
    connections: {
      holdOpen: (request, ms) => server.timeout(request, heldSeconds(ms)),
      release: (request) => server.timeout(request, idleTimeout),
    },
  });
  const server = Bun.serve({
    port: options.port,
    hostname: options.host,
    idleTimeout,
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

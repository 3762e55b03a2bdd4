import { answerError, bodyReadFailure, DomainError, type Logger, readAtMost } from "@platform/core";
import type { HttpMetrics } from "./metrics.ts";
import { attachRequestMeta } from "./request-meta.ts";

/** The connections requests arrive on: how long one may stay silent (see RequestInfo.holdOpen). */
export interface Connections {
  /** The connection stays open, silent, for `ms` more. */
  holdOpen(request: Request, ms: number): void;
  /** The connection takes the server's idle timeout back. */
  release(request: Request): void;
}

export interface EdgeOptions {
  logger: Logger;
  metrics: HttpMetrics;
  routeOf: (method: string, pathname: string) => string;
  maxBodyBytes: number;
  connections: Connections;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;
const METHODS_WITH_BODY = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Everything every request goes through, whatever route it reaches: a request id
 * (kept from `X-Request-Id` when well-formed) on the response and every log line,
 * the body size limit, its connection held open while it waits for a run, one access log
 * line, and the Prometheus observation.
 */
export function withEdge(handle: (request: Request) => Promise<Response>, options: EdgeOptions) {
  const { logger, metrics, routeOf, maxBodyBytes, connections } = options;

  const tooLarge = () => new DomainError("payload_too_large", `request body exceeds ${maxBodyBytes} bytes`);

  /**
   * The request with its body within the limit; throws `payload_too_large` beyond it. A
   * declared length is believed (Bun reads no more than it), and then `request.body` is never
   * touched: making its stream costs 1.3-3.5 µs a request, 5-15% of a trivial server's CPU.
   */
  async function admit(request: Request): Promise<Request> {
    if (!METHODS_WITH_BODY.has(request.method)) return request;
    const declared = request.headers.get("content-length");
    if (declared !== null) {
      if (Number(declared) > maxBodyBytes) throw tooLarge();
      return request;
    }
    if (!request.body) return request;
    const body = await readAtMost(request.body, maxBodyBytes).catch((error: unknown) => {
      throw bodyReadFailure(request, error);
    });
    if (!body) throw tooLarge();
    return new Request(request.url, { method: request.method, headers: request.headers, body });
  }

  return async (incoming: Request, ip: string): Promise<Response> => {
    const started = performance.now();
    const offered = incoming.headers.get("x-request-id");
    const id = offered && REQUEST_ID.test(offered) ? offered : crypto.randomUUID();
    const url = new URL(incoming.url);
    let response: Response;
    let held = false;
    const holdOpen = (ms: number) => {
      held = true;
      connections.holdOpen(incoming, ms);
    };
    try {
      const admitted = await admit(incoming);
      attachRequestMeta(admitted, { id, ip, path: url.pathname, holdOpen });
      response = await handle(admitted);
    } catch (error) {
      response = answerError(error, { area: "platform", logger, requestId: id });
    }
    // Bun keeps a request's timeout for its connection's idle time after it: a kept-alive connection is not held.
    if (held) connections.release(incoming);
    response.headers.set("x-request-id", id);
    const seconds = (performance.now() - started) / 1000;
    const route = routeOf(incoming.method, url.pathname);
    metrics.observe(incoming.method, route, response.status, seconds);
    if (logger.isLevelEnabled("info")) {
      logger.info(
        {
          reqId: id,
          method: incoming.method,
          route,
          path: url.pathname,
          status: response.status,
          ms: Math.round(seconds * 1000),
        },
        "request",
      );
    }
    return response;
  };
}

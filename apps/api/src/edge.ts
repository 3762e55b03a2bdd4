import { type Logger, readAtMost } from "@platform/core";
import type { HttpMetrics } from "./metrics.ts";
import { attachRequestMeta } from "./request-meta.ts";

export interface EdgeOptions {
  logger: Logger;
  metrics: HttpMetrics;
  routeOf: (method: string, pathname: string) => string;
  maxBodyBytes: number;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;
const METHODS_WITH_BODY = new Set(["POST", "PUT", "PATCH", "DELETE"]);

function errorResponse(status: number, error: string): Response {
  return Response.json({ error }, { status });
}

/**
 * Everything every request goes through, whatever route it reaches: a request id
 * (kept from `X-Request-Id` when well-formed) on the response and every log line,
 * the body size limit, one access log line, and the Prometheus observation.
 */
export function withEdge(handle: (request: Request) => Promise<Response>, options: EdgeOptions) {
  const { logger, metrics, routeOf, maxBodyBytes } = options;

  async function admit(request: Request): Promise<Request | Response> {
    if (!METHODS_WITH_BODY.has(request.method) || !request.body) return request;
    const declared = request.headers.get("content-length");
    if (declared !== null) {
      return Number(declared) > maxBodyBytes
        ? errorResponse(413, `request body exceeds ${maxBodyBytes} bytes`)
        : request;
    }
    const body = await readAtMost(request.body, maxBodyBytes);
    if (!body) return errorResponse(413, `request body exceeds ${maxBodyBytes} bytes`);
    return new Request(request.url, { method: request.method, headers: request.headers, body });
  }

  return async (incoming: Request, ip: string): Promise<Response> => {
    const started = performance.now();
    const offered = incoming.headers.get("x-request-id");
    const id = offered && REQUEST_ID.test(offered) ? offered : crypto.randomUUID();
    const url = new URL(incoming.url);
    let response: Response;
    try {
      const admitted = await admit(incoming);
      if (admitted instanceof Response) {
        response = admitted;
      } else {
        attachRequestMeta(admitted, { id, ip, path: url.pathname });
        response = await handle(admitted);
      }
    } catch (error) {
      logger.error({ reqId: id, err: error }, "unhandled error");
      response = errorResponse(500, "internal error");
    }
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

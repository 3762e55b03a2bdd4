import { type AppRouter, type Context, describeError, type Logger } from "@platform/core";
import type { TRPCError } from "@trpc/server";
import { createOpenApiFetchHandler } from "trpc-to-openapi";

/**
 * The spec's REST surface, served at the root. trpc-to-openapi strips its endpoint from
 * the whole URL string, so it is handed a copy of the request at a fixed internal origin
 * under `/rest` (see stack-notes.md), never the client's URL.
 */
const INTERNAL_ORIGIN = "http://localhost/rest";

export interface RestHandlerOptions {
  router: AppRouter;
  logger: Logger;
}

/** The JSON object of a DELETE request's body, whose flat fields are read like query parameters. */
async function deleteBodyAsQuery(request: Request, url: URL): Promise<void> {
  const text = await request.text();
  if (!text.trim()) return;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return;
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) return;
  for (const [key, value] of Object.entries(body)) {
    if (["string", "number", "boolean"].includes(typeof value) && !url.searchParams.has(key)) {
      url.searchParams.set(key, String(value));
    }
  }
}

async function toInternalRequest(request: Request): Promise<Request> {
  const original = new URL(request.url);
  const url = new URL(`${INTERNAL_ORIGIN}${original.pathname}${original.search}`);
  const headers = new Headers(request.headers);
  if (request.method === "GET" || request.method === "HEAD")
    return new Request(url.toString(), { method: request.method, headers });
  if (request.method === "DELETE") {
    await deleteBodyAsQuery(request, url);
    headers.delete("content-length");
    return new Request(url.toString(), { method: "DELETE", headers });
  }
  const body = await request.arrayBuffer();
  if (body.byteLength === 0) {
    headers.set("content-type", "application/json");
    return new Request(url.toString(), { method: request.method, headers, body: "{}" });
  }
  return new Request(url.toString(), { method: request.method, headers, body });
}

export function createRestHandler({ router, logger }: RestHandlerOptions) {
  return async (request: Request, context: Context): Promise<Response> => {
    const response = await createOpenApiFetchHandler({
      endpoint: "/rest",
      req: await toInternalRequest(request),
      router,
      createContext: () => context,
      onError: ({ error, path }: { error: TRPCError; path?: string }) => {
        if (describeError(error, path).code === "internal_error") {
          logger.error({ reqId: context.request.id, path, err: error.cause ?? error }, "request failed");
        }
      },
    });
    if (response.status < 400) return response;
    // The adapter writes tRPC's own error body; the formatter left the spec's body under data.failure.
    const payload = (await response.json().catch(() => null)) as { data?: { failure?: FailureShape } } | null;
    const failure = payload?.data?.failure;
    if (!failure) return Response.json({ error: "internal error" }, { status: 500 });
    return Response.json(failure.body, { status: failure.status, headers: failure.headers });
  };
}

interface FailureShape {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

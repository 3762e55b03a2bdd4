import {
  type AppRouter,
  answerError,
  type Context,
  type DescribedError,
  describeError,
  isDomainError,
  type Logger,
  readUtf8Text,
} from "@platform/core";
import { TRPCError } from "@trpc/server";
import { createOpenApiNodeHttpHandler } from "trpc-to-openapi";

/**
 * The spec's REST surface, served at the root through trpc-to-openapi's request handler.
 *
 * The library's fetch adapter builds that handler anew for every request (and with it,
 * outside NODE_ENV=production, the whole OpenAPI document: 20x slower), and strips its
 * endpoint from the URL as a string. This adapter builds the handler once and hands it
 * the client's own URL, with the body already read.
 */

export interface RestHandlerOptions {
  router: AppRouter;
  logger: Logger;
}

/** The body the handler sees, or the error it should raise when it reads it. */
type ReadBody = { ok: true; value: unknown } | { ok: false; error: TRPCError };

const notJson = () => new TRPCError({ code: "PARSE_ERROR", message: "request body is not valid JSON" });

/** The body as UTF-8 text, or the 400 its bytes deserve, raised when the procedure reads it (so its area words it). */
async function readText(request: Request): Promise<{ ok: true; text: string } | { ok: false; error: TRPCError }> {
  try {
    return { ok: true, text: await readUtf8Text(request) };
  } catch (error) {
    if (!isDomainError(error)) throw error;
    return { ok: false, error: new TRPCError({ code: "BAD_REQUEST", cause: error }) };
  }
}

/**
 * A DELETE request's JSON body: its flat fields are read like query parameters. The URL with
 * them, if any. Bytes that are not UTF-8 are refused here (no procedure reads this body).
 */
async function foldDeleteBodyIntoQuery(request: Request): Promise<string | undefined> {
  const text = await readUtf8Text(request);
  if (!text.trim()) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) return undefined;
  const url = new URL(request.url);
  for (const [key, value] of Object.entries(body)) {
    if (["string", "number", "boolean"].includes(typeof value) && !url.searchParams.has(key)) {
      url.searchParams.set(key, String(value));
    }
  }
  return url.toString();
}

async function readJsonBody(request: Request): Promise<ReadBody> {
  const read = await readText(request);
  if (!read.ok) return read;
  const { text } = read;
  if (!text.trim()) {
    // An empty POST/PUT is read as `{}`, whatever content type it claims.
    request.headers.set("content-type", "application/json");
    return { ok: true, value: {} };
  }
  if (!request.headers.get("content-type")?.includes("application/json")) return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, error: notJson() };
  }
}

/**
 * Readies the client's own `Request` for the handler (which checks for a real one): `body`
 * becomes the parsed JSON and, on DELETE, the body's fields join the URL. Defining these on
 * the request itself spares building a copy of it, its URL and its headers for every call.
 */
async function prepareForHandler(request: Request): Promise<Request> {
  let body: ReadBody = { ok: true, value: undefined };
  if (request.method === "DELETE") {
    const url = await foldDeleteBodyIntoQuery(request);
    if (url) Object.defineProperty(request, "url", { value: url });
  } else if (request.method !== "GET") {
    body = await readJsonBody(request);
  }
  Object.defineProperty(request, "body", {
    get() {
      if (!body.ok) throw body.error;
      return body.value;
    },
  });
  return request;
}

/** Collects what the handler writes into a fetch `Response`. */
function responseCollector(): { res: unknown; done: Promise<Response> } {
  const headers = new Headers();
  let statusCode = 200;
  let resolve: (response: Response) => void = () => {};
  const done = new Promise<Response>((r) => {
    resolve = r;
  });
  const res = {
    setHeader(key: string, value: string | string[]) {
      if (typeof value === "string") headers.set(key, value);
      else for (const v of value) headers.append(key, v);
    },
    get statusCode() {
      return statusCode;
    },
    set statusCode(code: number) {
      statusCode = code;
    },
    end(body?: string) {
      resolve(new Response(body, { status: statusCode, headers }));
    },
  };
  return { res, done };
}

export function createRestHandler({ router, logger }: RestHandlerOptions) {
  const contexts = new WeakMap<object, Context>();
  /** What went wrong with a request, in the domain's terms, taken from the error itself. */
  const failures = new WeakMap<object, DescribedError>();
  const handler = createOpenApiNodeHttpHandler({
    router,
    createContext: ({ req }: { req: object }) => {
      const context = contexts.get(req);
      if (!context) throw new Error("REST request without a context");
      return context;
    },
    onError: ({ error, path, req }: { error: TRPCError; path?: string; req: object }) => {
      const failure = describeError(error, path);
      failures.set(req, failure);
      if (failure.code === "internal_error") {
        logger.error({ reqId: contexts.get(req)?.request.id, path, err: error.cause ?? error }, "request failed");
      }
    },
  } as Parameters<typeof createOpenApiNodeHttpHandler>[0]);

  return async (request: Request, context: Context): Promise<Response> => {
    let req: Request;
    try {
      req = await prepareForHandler(request);
    } catch (error) {
      return answerError(error, { area: "platform", logger, requestId: context.request.id });
    }
    contexts.set(req, context);
    const { res, done } = responseCollector();
    await (handler as (req: unknown, res: unknown) => Promise<void>)(req, res);
    const response = await done;
    if (response.status < 400) return response;
    // The handler writes tRPC's own error body; the spec's body comes from the error it reported.
    const failure = failures.get(req);
    if (!failure) return Response.json({ error: "internal error" }, { status: 500 });
    return Response.json(failure.body, { status: failure.status, headers: failure.headers });
  };
}

import { type AppRouter, type Context, describeError, type Logger, readUtf8Text } from "@platform/core";
import { TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";

/** Every procedure's method, for `OPTIONS` and `Allow`. */
const ALLOW = "GET, POST, OPTIONS";

/** tRPC for TypeScript clients at `/trpc`, on the same routers and context as REST. */
export function createTrpcHandler({ router, logger }: { router: AppRouter; logger: Logger }) {
  return async (request: Request, context: Context): Promise<Response> => {
    if (request.method === "OPTIONS") return new Response(null, { status: 204, headers: { allow: ALLOW } });
    // tRPC reads the body with `text()`, which replaces bytes that are not UTF-8: they are refused instead.
    Object.defineProperty(request, "text", {
      value: () =>
        readUtf8Text(request).catch((error: unknown) => {
          throw new TRPCError({ code: "BAD_REQUEST", cause: error });
        }),
    });
    const response = await fetchRequestHandler({
      endpoint: "/trpc",
      req: request,
      router,
      createContext: () => context,
      onError: ({ error, path }) => {
        if (describeError(error, path).code === "internal_error") {
          logger.error({ reqId: context.request.id, path, err: error.cause ?? error }, "request failed");
        }
      },
      // What REST sends beside an error (Retry-After, a KV conflict's current revision) is sent here too.
      responseMeta: ({ errors }) => {
        const headers = new Headers();
        for (const error of errors) {
          for (const [name, value] of Object.entries(describeError(error, undefined).headers)) headers.set(name, value);
        }
        return { headers };
      },
    });
    // Errors raised before a procedure runs (an unsupported content type) come with no label (sent as plain text).
    if (!response.headers.has("content-type")) {
      response.headers.set("content-type", "application/json");
    }
    return response;
  };
}

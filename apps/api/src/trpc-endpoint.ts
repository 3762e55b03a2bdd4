import { type AppRouter, type Context, describeError, type Logger } from "@platform/core";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";

/** tRPC for TypeScript clients at `/trpc`, on the same routers and context as REST. */
export function createTrpcHandler({ router, logger }: { router: AppRouter; logger: Logger }) {
  return (request: Request, context: Context): Promise<Response> =>
    fetchRequestHandler({
      endpoint: "/trpc",
      req: request,
      router,
      createContext: () => context,
      onError: ({ error, path }) => {
        if (describeError(error, path).code === "internal_error") {
          logger.error({ reqId: context.request.id, path, err: error.cause ?? error }, "request failed");
        }
      },
    });
}

import { type AppRouter, type Context, describeError, type Logger } from "@platform/core";
import { callTRPCProcedure, getTRPCErrorFromUnknown, TRPCError } from "@trpc/server";
import {
  coerceSchema,
  forEachOpenApiProcedure,
  getInputOutputParsers,
  getPathRegExp,
  instanceofZodTypeLikeVoid,
  instanceofZodTypeObject,
  instanceofZodTypeOptional,
  normalizePath,
  unwrapZodType,
  zodSupportsCoerce,
} from "trpc-to-openapi";
import { type ZodObject, z } from "zod";

/**
 * The spec's REST surface, served at the root: each procedure's `meta.openapi` method and
 * path, its input read from the query (GET, DELETE) or the JSON body plus the path
 * parameters, as trpc-to-openapi's handler reads them, and the procedure called directly.
 *
 * The library's handler goes through a tRPC caller proxy, the default error shape and a
 * node-style response for every request, and strips its endpoint from the URL as a
 * string; answering from the route table and the error itself costs a fraction of that.
 */

export interface RestHandlerOptions {
  router: AppRouter;
  logger: Logger;
}

interface Operation {
  /** The procedure's path in the router (`storage.kv.keys.get`). */
  procedure: string;
  type: "query" | "mutation";
  pattern: RegExp;
  /** The input schema when it is an object (for query arrays and coercion); null for void input. */
  input: ZodObject | null;
  takesInput: boolean;
  /** Input fields that are arrays: a single query value is read as a list of one. */
  arrayFields: string[];
  /** Whether the input schema was made to coerce strings yet (on the first call, as the library does). */
  coerced: boolean;
}

const isArraySchema = (schema: z.ZodType) =>
  schema instanceof z.ZodArray || (instanceofZodTypeOptional(schema) && schema.unwrap() instanceof z.ZodArray);

/** Every procedure with `meta.openapi`, by method, in the router's order (the first match wins). */
function routeTable(router: AppRouter): Map<string, Operation[]> {
  const table = new Map<string, Operation[]>();
  forEachOpenApiProcedure(router._def.procedures, ({ path, procedure, type, meta }) => {
    if (type === "subscription") return;
    const schema = unwrapZodType(getInputOutputParsers(procedure).inputParser, true);
    const input = instanceofZodTypeObject(schema) ? (schema as ZodObject) : null;
    const operation: Operation = {
      procedure: path,
      type,
      pattern: getPathRegExp(normalizePath(meta.openapi.path)),
      input,
      takesInput: !instanceofZodTypeLikeVoid(schema),
      arrayFields: input ? Object.keys(input.shape).filter((key) => isArraySchema(input.shape[key])) : [],
      coerced: false,
    };
    const method = meta.openapi.method;
    table.set(method, [...(table.get(method) ?? []), operation]);
  });
  return table;
}

/** A DELETE request's JSON body: its flat fields are read like query parameters. */
async function foldDeleteBodyIntoQuery(request: Request, url: URL): Promise<void> {
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

/** Query parameters: one value as itself, repeated ones as a list; array fields always a list. */
function readQuery(url: URL, operation: Operation): Record<string, unknown> {
  const query: Record<string, unknown> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(key);
    query[key] = values.length === 1 ? values[0] : values;
  }
  for (const key of operation.arrayFields) {
    if (query[key] !== undefined && !Array.isArray(query[key])) query[key] = [query[key]];
  }
  return query;
}

/** A JSON body; an empty one is `{}`, whatever content type it claims. */
async function readBody(request: Request, operation: Operation): Promise<unknown> {
  const text = await request.text();
  if (!text.trim()) return {};
  const contentType = request.headers.get("content-type");
  if (!contentType?.startsWith("application/json")) {
    throw new TRPCError({
      code: "UNSUPPORTED_MEDIA_TYPE",
      message: contentType ? `Unsupported content-type "${contentType}` : "Missing content-type header",
    });
  }
  if (!operation.takesInput) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new TRPCError({ code: "PARSE_ERROR", message: "request body is not valid JSON" });
  }
}

export function createRestHandler({ router, logger }: RestHandlerOptions) {
  const table = routeTable(router);

  function find(method: string, path: string): { operation: Operation; params: Record<string, string> } | null {
    for (const operation of table.get(method) ?? []) {
      const match = operation.pattern.exec(path);
      if (match) return { operation, params: match.groups ?? {} };
    }
    return null;
  }

  async function call(request: Request, context: Context, url: URL, found: ReturnType<typeof find>) {
    if (!found) throw new TRPCError({ code: "NOT_FOUND", message: "Not found" });
    const { operation, params } = found;
    const usesBody = request.method !== "GET" && request.method !== "DELETE";
    const raw = usesBody ? await readBody(request, operation) : readQuery(url, operation);
    const input = operation.takesInput ? { ...(raw as object), ...params } : undefined;
    // The library's coercion of string values to the declared types, which it sets on the schema itself.
    if (zodSupportsCoerce && operation.input && !operation.coerced) {
      coerceSchema(operation.input);
      operation.coerced = true;
    }
    return callTRPCProcedure({
      router,
      path: operation.procedure,
      type: operation.type,
      ctx: context,
      getRawInput: async () => input,
      signal: undefined,
      batchIndex: 0,
    });
  }

  return async (request: Request, context: Context): Promise<Response> => {
    const url = new URL(request.url);
    const found = find(request.method, normalizePath(url.pathname));
    try {
      if (request.method === "DELETE") await foldDeleteBodyIntoQuery(request, url);
      const data = await call(request, context, url, found);
      return new Response(JSON.stringify(data), { headers: { "content-type": "application/json" } });
    } catch (cause) {
      const path = found?.operation.procedure;
      const error = getTRPCErrorFromUnknown(cause);
      const failure = describeError(error, path);
      if (failure.code === "internal_error") {
        logger.error({ reqId: context.request.id, path, err: error.cause ?? error }, "request failed");
      }
      return Response.json(failure.body, { status: failure.status, headers: failure.headers });
    }
  };
}

import { initTRPC, TRPCError } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";
import { ZodError } from "zod";
import type { Context } from "./context.ts";
import { areaOfProcedure, DomainError, type ErrorCode, type HttpFailure, toHttpFailure } from "./errors.ts";
import { findUnsafeInput } from "./input-guard.ts";

/** tRPC's own codes, for errors raised before a procedure runs (bad JSON, unknown route). */
const TRPC_CODE_TO_DOMAIN: Partial<Record<TRPCError["code"], ErrorCode>> = {
  BAD_REQUEST: "validation_error",
  PARSE_ERROR: "validation_error",
  UNAUTHORIZED: "unauthorized",
  FORBIDDEN: "forbidden",
  NOT_FOUND: "not_found",
  METHOD_NOT_SUPPORTED: "method_not_allowed",
  CONFLICT: "conflict",
  PAYLOAD_TOO_LARGE: "payload_too_large",
  UNSUPPORTED_MEDIA_TYPE: "unsupported_media_type",
  TOO_MANY_REQUESTS: "rate_limited",
  NOT_IMPLEMENTED: "not_implemented",
  TIMEOUT: "timeout",
};

function describeZodError(error: ZodError): string {
  const problems = error.issues.map((issue) => {
    const where = issue.path.length ? issue.path.join(".") : "body";
    return `${where}: ${issue.message}`;
  });
  return `invalid input: ${problems.join("; ")}`;
}

/** Turns whatever a procedure or the adapter threw into the domain's terms. */
export function describeError(error: TRPCError, procedurePath: string | undefined): HttpFailure & { code: ErrorCode } {
  const area = areaOfProcedure(procedurePath);
  const cause = error.cause;
  let code: ErrorCode;
  let message: string;
  let retryAfter: number | undefined;
  let headers: Record<string, string> | undefined;
  if (cause instanceof DomainError) {
    code = cause.code;
    message = cause.message;
    retryAfter = cause.retryAfterSeconds;
    headers = cause.headers;
  } else if (cause instanceof ZodError && error.code === "BAD_REQUEST") {
    code = "validation_error";
    message = describeZodError(cause);
  } else {
    code = TRPC_CODE_TO_DOMAIN[error.code] ?? "internal_error";
    message = error.code === "PARSE_ERROR" ? "request body is not valid JSON" : error.message.toLowerCase();
  }
  return { code, ...toHttpFailure(code, area, message, retryAfter, headers) };
}

const t = initTRPC
  .meta<OpenApiMeta>()
  .context<Context>()
  .create({
    errorFormatter({ shape, error, path }) {
      const failure = describeError(error, path);
      // No stack, no driver message: only the domain code and the body the spec defines.
      return {
        message: failure.code === "internal_error" ? "internal error" : shape.message,
        code: shape.code,
        data: { code: shape.data.code, httpStatus: failure.status, path, domainCode: failure.code, failure },
      };
    },
  });

export const router = t.router;

/** Every procedure starts here: input no area could store (NUL, malformed text, absurd nesting) is a 400 first. */
export const publicProcedure = t.procedure.use(async ({ getRawInput, next }) => {
  const problem = findUnsafeInput(await getRawInput());
  if (problem) throw new DomainError("validation_error", `invalid input: ${problem}`);
  return next();
});

/** The path an API key's restrictions are matched against: over tRPC, the procedure's REST path. */
const authTarget = (ctx: Context, meta: OpenApiMeta | undefined) => ({
  path: meta?.openapi && ctx.request.path.startsWith("/trpc") ? meta.openapi.path : ctx.request.path,
});

/** Resolves the credential into `ctx.principal`, or answers 401/403 before the procedure runs. */
export const authedProcedure = publicProcedure.use(async ({ ctx, meta, next }) => {
  const principal = await ctx.services.authenticate(ctx.credential, authTarget(ctx, meta));
  return next({ ctx: { ...ctx, principal } });
});

/** For operations open to anonymous callers: a credential, when sent, is verified all the same (a bad one is 401). */
export const optionallyAuthedProcedure = publicProcedure.use(async ({ ctx, meta, next }) => {
  const principal = ctx.credential ? await ctx.services.authenticate(ctx.credential, authTarget(ctx, meta)) : undefined;
  return next({ ctx: { ...ctx, principal } });
});

export { TRPCError };

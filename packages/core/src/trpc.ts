import { initTRPC, TRPCError } from "@trpc/server";
import { type TRPC_ERROR_CODE_KEY, TRPC_ERROR_CODES_BY_KEY } from "@trpc/server/rpc";
import type { OpenApiMeta } from "trpc-to-openapi";
import { ZodError } from "zod";
import { type Credential, parseCredential, type RequestInfo } from "./caller.ts";
import {
  areaOfProcedure,
  DomainError,
  ERRORS,
  type ErrorCode,
  type HttpFailure,
  invalidInput,
  type Problem,
  problemsOfZodError,
  toHttpFailure,
} from "./errors.ts";
import { findUnsafeInput } from "./input-guard.ts";
import type { Services } from "./services.ts";
import { templateBudgetProblem } from "./templates/budget.ts";

/** What every procedure is called with: built per request by `createContext`, beside the tRPC setup that reads it. */
export interface Context {
  services: Services;
  request: RequestInfo;
  credential: Credential;
}

export function createContext(services: Services, request: RequestInfo): Context {
  return { services, request, credential: parseCredential(request.headers) };
}

/** The domain code of each tRPC code, for errors tRPC raises itself before a procedure runs (bad JSON, unknown procedure). */
const DOMAIN_CODE_OF: Partial<Record<TRPC_ERROR_CODE_KEY, ErrorCode>> = {
  ...Object.fromEntries(Object.entries(ERRORS).map(([domain, { trpc }]) => [trpc, domain])),
  PARSE_ERROR: "validation_error",
  TIMEOUT: "timeout",
};

/** tRPC's and trpc-to-openapi's 415 texts (`Unsupported content-type "text/plain`), said plainly. */
function describeMediaTypeError(message: string): string {
  if (message.startsWith("Missing content-type")) return "missing content type: send application/json";
  const offered = /content-type "([^";]*)/.exec(message)?.[1];
  return offered ? `unsupported content type ${offered}: send application/json` : message.toLowerCase();
}

export interface DescribedError extends HttpFailure {
  code: ErrorCode;
  /** What the caller may read: the error's own words, or `internal error`; REST bodies may use the spec's text instead. */
  message: string;
  /** What is wrong with the input, field by field, when the error names it. */
  problems?: readonly Problem[];
}

/** Whatever a procedure or the adapter threw, as the domain error it stands for. */
function asDomainError(error: TRPCError): DomainError {
  const cause = error.cause;
  if (cause instanceof DomainError) return cause;
  if (cause instanceof ZodError && error.code === "BAD_REQUEST") {
    return invalidInput(problemsOfZodError(cause));
  }
  const code = DOMAIN_CODE_OF[error.code] ?? "internal_error";
  if (error.code === "PARSE_ERROR") return new DomainError(code, "request body is not valid JSON");
  if (error.code === "UNSUPPORTED_MEDIA_TYPE") return new DomainError(code, describeMediaTypeError(error.message));
  return new DomainError(code, error.message.toLowerCase());
}

/** Turns whatever a procedure or the adapter threw into the domain's terms. */
export function describeError(error: TRPCError, procedurePath: string | undefined): DescribedError {
  const domain = asDomainError(error);
  const failure = toHttpFailure(domain, areaOfProcedure(procedurePath));
  return {
    code: domain.code,
    message: domain.code === "internal_error" ? "internal error" : domain.message,
    problems: domain.problems,
    ...failure,
  };
}

const t = initTRPC
  .meta<OpenApiMeta>()
  .context<Context>()
  .create({
    errorFormatter({ error, path }) {
      const described = describeError(error, path);
      const trpcCode = ERRORS[described.code].trpc;
      // No stack, no driver message: the readable message, tRPC's code for it, the domain code
      // and, for invalid input, its problems as data (as REST answers them).
      const problems = described.problems ? { problems: described.problems } : {};
      return {
        message: described.message,
        code: TRPC_ERROR_CODES_BY_KEY[trpcCode],
        data: { code: trpcCode, httpStatus: described.status, path, domainCode: described.code, ...problems },
      };
    },
  });

export const router = t.router;

/** Input no area could store (NUL, malformed text, absurd nesting) is a 400 before anything else. */
async function refuseUnsafeInput(getRawInput: () => Promise<unknown>): Promise<void> {
  const problem = findUnsafeInput(await getRawInput());
  if (problem) throw invalidInput(problem);
}

/** The method and path an API key's restrictions are matched against: over tRPC, the procedure's REST ones. */
const authTarget = (ctx: Context, meta: OpenApiMeta | undefined) =>
  meta?.openapi && ctx.request.path.startsWith("/trpc")
    ? { method: meta.openapi.method, path: meta.openapi.path }
    : { method: ctx.request.method, path: ctx.request.path };

// Each builder is one middleware: tRPC copies a call's options at every level, a cost every request pays.

/** Every procedure starts with the input check. */
export const publicProcedure = t.procedure.use(async ({ getRawInput, next }) => {
  await refuseUnsafeInput(getRawInput);
  return next();
});

/** Resolves the credential into `ctx.principal`, or answers 401/403 before the procedure runs. */
export const authedProcedure = t.procedure.use(async ({ ctx, meta, getRawInput, next }) => {
  await refuseUnsafeInput(getRawInput);
  const principal = await ctx.services.authenticate(ctx.credential, authTarget(ctx, meta));
  return next({ ctx: { principal } });
});

/** For operations open to anonymous callers: a credential, when sent, is verified all the same (a bad one is 401). */
export const optionallyAuthedProcedure = t.procedure.use(async ({ ctx, meta, getRawInput, next }) => {
  await refuseUnsafeInput(getRawInput);
  const principal = ctx.credential ? await ctx.services.authenticate(ctx.credential, authTarget(ctx, meta)) : undefined;
  return next({ ctx: { principal } });
});

/**
 * For operations that save a definition holding templates (flows, node templates): how many
 * templates it holds, and how long they are, is bounded before anything parses them.
 */
const definitionProcedure = authedProcedure.use(async ({ getRawInput, next }) => {
  const problem = templateBudgetProblem(await getRawInput());
  if (problem) throw new DomainError("payload_too_large", `the definition ${problem}`);
  return next();
});

export { TRPCError };

type OpenApiOperation = NonNullable<OpenApiMeta["openapi"]>;
/** An operation as an area declares it: its tags and `protect` come from `operations` and the builder. */
export type Operation = Omit<OpenApiOperation, "tags" | "protect">;

/**
 * The procedure builders of one area (its OpenAPI `tags`), each with its operation: `authed`
 * ones are protected (a credential is required), `open` and `optionallyAuthed` ones are not.
 */
export function operations(tags: string[]) {
  const meta = (operation: Operation, protect: boolean): OpenApiMeta => ({ openapi: { ...operation, tags, protect } });
  return {
    authed: (operation: Operation) => authedProcedure.meta(meta(operation, true)),
    /** An `authed` operation that saves a definition holding templates (see `definitionProcedure`). */
    definition: (operation: Operation) => definitionProcedure.meta(meta(operation, true)),
    open: (operation: Operation) => publicProcedure.meta(meta(operation, false)),
    optionallyAuthed: (operation: Operation) => optionallyAuthedProcedure.meta(meta(operation, false)),
  };
}

import { TRPCClientError } from "@trpc/client";
import type { AppRouter } from "./app-router.ts";

/** What a failed call's error carries beside its code: the server's error formatter's `data`. */
type ServerErrorData = NonNullable<TRPCClientError<AppRouter>["data"]>;

/**
 * One thing wrong with a call's input: `path` names the field as a dotted path in the
 * input's terms (`steps.2.payload.url`; empty for the input as a whole), `message` what is
 * wrong with it. A 400 for invalid input lists them; its `message` says the same as text.
 */
export type Problem = NonNullable<ServerErrorData["problems"]>[number];

/**
 * What every failed call rejects with: the HTTP status, the server's error message (e.g.
 * `resource not found`, `invalid input: key: …`), for invalid input its problems field by
 * field, and the request id the server logged it under. A request that got no answer has
 * status 0 and code `network_error`.
 * It is a `TRPCClientError`, so tRPC's own helpers keep working.
 */
export class PlatformError extends TRPCClientError<AppRouter> {
  /** HTTP status: 400, 401, 403, 404, 409, 429, 500, …; 0 when the server was not reached. */
  readonly status: number;
  /** The server's error code (`validation_error`, `unauthorized`, `not_found`, …), or `network_error`. */
  readonly code: string;
  /** The `X-Request-Id` of the failed request, to find it in the server's log; null without an answer. */
  readonly requestId: string | null;
  /** For invalid input (400), what is wrong with it, field by field; empty when the server named no field. */
  readonly problems: readonly Problem[];

  constructor(
    message: string,
    details: {
      status: number;
      code: string;
      requestId: string | null;
      problems?: readonly Problem[];
      cause?: Error;
      original?: TRPCClientError<AppRouter>;
    },
  ) {
    const original = details.original;
    super(message, {
      cause: details.cause ?? original?.cause,
      meta: original?.meta,
      result: original?.shape ? { error: original.shape } : undefined,
    });
    // TRPCClientError resets the prototype and name to its own.
    Object.setPrototypeOf(this, PlatformError.prototype);
    this.name = "PlatformError";
    this.status = details.status;
    this.code = details.code;
    this.requestId = details.requestId;
    this.problems = details.problems ?? [];
  }
}

interface ErrorData {
  httpStatus?: number;
  domainCode?: string;
  problems?: unknown;
}

/** The problems an error body or tRPC error data carries, if they are what the server sends. */
function problemsIn(value: unknown): Problem[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (item): item is Problem =>
      typeof item === "object" && item !== null && typeof item.path === "string" && typeof item.message === "string",
  );
}

const CODES_BY_STATUS: Record<number, string> = {
  400: "validation_error",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  409: "conflict",
  413: "payload_too_large",
  429: "rate_limited",
  500: "internal_error",
  501: "not_implemented",
  503: "unavailable",
  504: "timeout",
};

const codeFor = (status: number) => (status === 0 ? "network_error" : (CODES_BY_STATUS[status] ?? "error"));

/** The error text of a REST error body: `{error}`, or `{message}` on the metrics endpoint. */
function bodyText(body: { error?: unknown; message?: unknown } | undefined): string | undefined {
  if (typeof body?.error === "string") return body.error;
  if (typeof body?.message === "string") return body.message;
  return undefined;
}

/** A PlatformError from a REST response that failed (sign-in, refresh). */
export async function errorFromResponse(response: Response): Promise<PlatformError> {
  const body = (await response.json().catch(() => undefined)) as
    | { error?: unknown; message?: unknown; problems?: unknown }
    | undefined;
  return new PlatformError(bodyText(body) ?? `request failed with status ${response.status}`, {
    status: response.status,
    code: codeFor(response.status),
    requestId: response.headers.get("x-request-id"),
    problems: problemsIn(body?.problems),
  });
}

/** A PlatformError for a request that got no answer (refused connection, DNS, abort). */
export function networkError(cause: unknown): PlatformError {
  const error = cause instanceof Error ? cause : new Error(String(cause));
  return new PlatformError(`network error: ${error.message}`, {
    status: 0,
    code: "network_error",
    requestId: null,
    cause: error,
  });
}

interface ResponseLike {
  status: number;
  headers: { get(name: string): string | null };
}

/** The HTTP response tRPC's link attached to an error, if there was one. */
function responseOf(meta: Record<string, unknown> | undefined): ResponseLike | undefined {
  const response = meta?.response as Partial<ResponseLike> | undefined;
  return typeof response?.status === "number" && typeof response.headers?.get === "function"
    ? (response as ResponseLike)
    : undefined;
}

/** Whatever a tRPC call failed with, as a PlatformError. */
export function toPlatformError(error: unknown): PlatformError {
  if (error instanceof PlatformError) return error;
  if (!(error instanceof TRPCClientError)) return networkError(error);
  const original = error as TRPCClientError<AppRouter>;
  if (original.cause instanceof PlatformError) return original.cause;
  const response = responseOf(original.meta);
  const data = original.data as ErrorData | undefined;
  const status = data?.httpStatus ?? response?.status ?? 0;
  return new PlatformError(original.message, {
    status,
    code: data?.domainCode ?? codeFor(status),
    requestId: response?.headers.get("x-request-id") ?? null,
    problems: problemsIn(data?.problems),
    original,
  });
}

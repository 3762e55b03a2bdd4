/**
 * The one domain error type, and the one table that turns its code into an HTTP
 * status and the spec's error body for the area that raised it.
 */

export const ERROR_STATUS = {
  validation_error: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  not_implemented: 501,
  bad_gateway: 502,
  unavailable: 503,
  timeout: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Seconds a rate-limited caller should wait; sent as `Retry-After`. */
    readonly retryAfterSeconds?: number,
    /** Response headers that tell the caller more (the current revision on a KV conflict). */
    readonly headers?: Record<string, string>,
  ) {
    // A 4xx is an answer, not a fault: no stack trace is captured for it. tRPC reads the
    // cause's stack on every refused request, and formatting it cost a 401 a fifth of its time.
    const answer = ERROR_STATUS[code] < 500;
    const limit = Error.stackTraceLimit;
    if (answer) Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = "DomainError";
    if (answer) this.stack = `DomainError: ${message}`;
  }
}

export function isDomainError(error: unknown): error is DomainError {
  return error instanceof DomainError;
}

/** The spec's areas, named by the first segment of a procedure path (`storage.publish`). */
export type Area =
  | "accounts"
  | "hub"
  | "monitoring"
  | "storage"
  | "gateway"
  | "secrets"
  | "flows"
  | "runs"
  | "webhooks"
  | "platform";

const AREAS = new Set<string>([
  "accounts",
  "hub",
  "monitoring",
  "storage",
  "gateway",
  "secrets",
  "flows",
  "runs",
  "webhooks",
]);

export function areaOfProcedure(procedurePath: string | undefined): Area {
  const first = procedurePath?.split(".")[0] ?? "";
  return AREAS.has(first) ? (first as Area) : "platform";
}

/**
 * Texts the spec states verbatim for an area; everything else carries the error's own message.
 * Storage answers codes for the cases the spec leaves out too (`conflict`, `payload_too_large`).
 */
const SPEC_TEXTS: Partial<Record<Area, Partial<Record<ErrorCode, string>>>> = {
  storage: {
    validation_error: "validation_error",
    unauthorized: "unauthorized",
    not_found: "not_found",
    conflict: "conflict",
    payload_too_large: "payload_too_large",
    internal_error: "internal_error",
  },
  gateway: { not_found: "The requested resource does not exist" },
  secrets: { not_found: "resource not found", internal_error: "error retrieving secret" },
  monitoring: { internal_error: "oops" },
};

export interface HttpFailure {
  status: number;
  body: { error: string } | { message: string; data: null };
  headers: Record<string, string>;
}

/** The single place an error becomes an HTTP answer. Internal messages never leave the server. */
export function toHttpFailure(
  code: ErrorCode,
  area: Area,
  message: string,
  retryAfterSeconds?: number,
  extraHeaders?: Record<string, string>,
): HttpFailure {
  const exposed = code === "internal_error" ? "internal error" : message;
  const text = SPEC_TEXTS[area]?.[code] ?? exposed;
  const headers: Record<string, string> = { ...extraHeaders };
  if (retryAfterSeconds !== undefined) headers["retry-after"] = String(Math.max(1, Math.ceil(retryAfterSeconds)));
  return {
    status: ERROR_STATUS[code],
    body: area === "monitoring" ? { message: text, data: null } : { error: text },
    headers,
  };
}

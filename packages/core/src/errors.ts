import type { TRPC_ERROR_CODE_KEY } from "@trpc/server/rpc";
import type { ZodError } from "zod";
import type { Logger } from "./logger.ts";

/**
 * The one domain error type, and the one table that turns its code into an HTTP status,
 * the tRPC code it travels as, and the spec's error body for the area that raised it.
 * REST (through `describeError`), tRPC's error formatter and every plain route
 * (`answerError`) read it; nothing else shapes an error.
 */

export const ERRORS = {
  validation_error: { status: 400, trpc: "BAD_REQUEST" },
  unauthorized: { status: 401, trpc: "UNAUTHORIZED" },
  forbidden: { status: 403, trpc: "FORBIDDEN" },
  not_found: { status: 404, trpc: "NOT_FOUND" },
  method_not_allowed: { status: 405, trpc: "METHOD_NOT_SUPPORTED" },
  conflict: { status: 409, trpc: "CONFLICT" },
  payload_too_large: { status: 413, trpc: "PAYLOAD_TOO_LARGE" },
  unsupported_media_type: { status: 415, trpc: "UNSUPPORTED_MEDIA_TYPE" },
  rate_limited: { status: 429, trpc: "TOO_MANY_REQUESTS" },
  /** The client went away before its request was read: not a server error, and nobody hears the answer. */
  client_closed: { status: 499, trpc: "CLIENT_CLOSED_REQUEST" },
  internal_error: { status: 500, trpc: "INTERNAL_SERVER_ERROR" },
  not_implemented: { status: 501, trpc: "NOT_IMPLEMENTED" },
  bad_gateway: { status: 502, trpc: "BAD_GATEWAY" },
  unavailable: { status: 503, trpc: "SERVICE_UNAVAILABLE" },
  timeout: { status: 504, trpc: "GATEWAY_TIMEOUT" },
} as const satisfies Record<string, { status: number; trpc: TRPC_ERROR_CODE_KEY }>;

export type ErrorCode = keyof typeof ERRORS;

/**
 * One thing wrong with a request's input: `path` names the field as a dotted path in the
 * request's own terms (`steps.2.payload.url`, `trigger.cron`, a path or query parameter's
 * name), empty for the input as a whole; `message` says what is wrong with it.
 */
export interface Problem {
  path: string;
  message: string;
}

const INVALID_INPUT = "invalid input: ";

/**
 * How a problem reads in an error's text: `steps.2.payload.url: must be a URL`. The whole
 * input reads `body`; `within` names what the path is inside (`body` for a webhook's fields).
 */
export function problemText({ path, message }: Problem, within?: string): string {
  const where = within === undefined ? path || "body" : path ? `${within}.${path}` : within;
  return `${where}: ${message}`;
}

/**
 * The 400 for input with these problems: its text lists them (`invalid input: a.b: …; c: …`,
 * which clients have read since before `problems`), and its answer carries them as data.
 */
export function invalidInput(
  problems: Problem | readonly Problem[],
  options: Omit<DomainErrorOptions, "problems"> & { within?: string } = {},
): DomainError {
  const list = Array.isArray(problems) ? (problems as readonly Problem[]) : [problems as Problem];
  const { within, ...rest } = options;
  const text = list.map((problem) => problemText(problem, within)).join("; ");
  return new DomainError("validation_error", `${INVALID_INPUT}${text}`, { ...rest, problems: list });
}

/** A zod failure's issues as problems, each at its dotted path. */
export function problemsOfZodError(error: ZodError): Problem[] {
  return error.issues.map((issue) => ({ path: issue.path.map(String).join("."), message: issue.message }));
}

export interface DomainErrorOptions {
  /** Seconds a rate-limited (or refused) caller should wait; sent as `Retry-After`. */
  retryAfterSeconds?: number;
  /** Response headers that tell the caller more (the current revision on a KV conflict). */
  headers?: Record<string, string>;
  /** What went wrong underneath: logged with its stack, never answered. */
  cause?: unknown;
  /**
   * Fields the answer carries beside `error`, for what a client should read by name rather than
   * parse from a sentence (which limit was reached, say); also where an area answers the spec's
   * fixed text instead of the message.
   */
  details?: Record<string, unknown>;
  /**
   * What is wrong with the input, field by field (a `validation_error`): answered as
   * `problems` beside `error`, over REST and in tRPC's error `data`. `invalidInput` builds
   * the error and its text from them.
   */
  problems?: readonly Problem[];
}

export class DomainError extends Error {
  readonly retryAfterSeconds?: number;
  readonly headers?: Record<string, string>;
  readonly details?: Record<string, unknown>;
  readonly problems?: readonly Problem[];

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: DomainErrorOptions = {},
  ) {
    // A 4xx is an answer, not a fault: no stack trace is captured for it. tRPC reads the
    // cause's stack on every refused request, and formatting it cost a 401 a fifth of its time.
    const answer = ERRORS[code].status < 500;
    const limit = Error.stackTraceLimit;
    if (answer) Error.stackTraceLimit = 0;
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    Error.stackTraceLimit = limit;
    this.name = "DomainError";
    if (answer) this.stack = `DomainError: ${message}`;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.headers = options.headers;
    this.details = options.details;
    if (options.problems?.length) this.problems = options.problems;
  }
}

/** What an error says, for logs and for a stored failure (anything thrown, not only an `Error`). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function isDomainError(error: unknown): error is DomainError {
  return error instanceof DomainError;
}

/**
 * The spec's areas, named by the first segment of a procedure path (`storage.publish`),
 * and `ingress` for the data planes (webhooks, gateways), whose answers carry the error's own words.
 */
export type Area =
  | "accounts"
  | "hub"
  | "monitoring"
  | "storage"
  | "gateway"
  | "secrets"
  | "flows"
  | "runs"
  | "ingress"
  | "platform";

const PROCEDURE_AREAS = new Set<string>([
  "accounts",
  "hub",
  "monitoring",
  "storage",
  "gateway",
  "secrets",
  "flows",
  "runs",
]);

export function areaOfProcedure(procedurePath: string | undefined): Area {
  const first = procedurePath?.split(".")[0] ?? "";
  return PROCEDURE_AREAS.has(first) ? (first as Area) : "platform";
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
  /** The area's error shape; a `validation_error` that names its problems carries them as `problems`. */
  body: ({ error: string } & Record<string, unknown>) | { message: string; data: null; problems?: readonly Problem[] };
  headers: Record<string, string>;
}

/** How an error is answered over HTTP in an area. Internal messages never leave the server. */
export function toHttpFailure(error: DomainError, area: Area): HttpFailure {
  const exposed = error.code === "internal_error" ? "internal error" : error.message;
  const text = SPEC_TEXTS[area]?.[error.code] ?? exposed;
  const headers: Record<string, string> = { ...error.headers };
  if (error.retryAfterSeconds !== undefined) {
    headers["retry-after"] = String(Math.max(1, Math.ceil(error.retryAfterSeconds)));
  }
  const problems = error.problems ? { problems: error.problems } : {};
  return {
    status: ERRORS[error.code].status,
    body:
      area === "monitoring"
        ? { message: text, data: null, ...problems }
        : { ...error.details, error: text, ...problems },
    headers,
  };
}

/** A JSON answer of a plain route. Answers are per caller and may carry tokens or tenants' data: no cache keeps them. */
export function jsonAnswer(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return Response.json(body, { status, headers: { "cache-control": "no-store", ...headers } });
}

export interface AnswerErrorOptions {
  area: Area;
  logger: Logger;
  requestId?: string;
}

/**
 * What a plain route (webhooks, gateways, runs started by hand, the HTTP edge) answers for
 * an error: a DomainError as the table says, anything else as a 500 with nothing of it.
 * Faults (5xx) are logged with their cause and the request id.
 */
export function answerError(error: unknown, options: AnswerErrorOptions): Response {
  const known = isDomainError(error) ? error : new DomainError("internal_error", "unexpected error", { cause: error });
  const failure = toHttpFailure(known, options.area);
  if (failure.status >= 500) {
    options.logger.error({ reqId: options.requestId, err: known.cause ?? known }, known.message);
  }
  return jsonAnswer(failure.status, failure.body, failure.headers);
}

import { describe, expect, test } from "bun:test";
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { capturedLogger } from "./captured-logger.ts";
import {
  type Area,
  answerError,
  DomainError,
  type DomainErrorOptions,
  ERRORS,
  type ErrorCode,
  invalidInput,
  toHttpFailure,
} from "./errors.ts";
import { describeError } from "./trpc.ts";

const failureOf = (code: ErrorCode, area: Area, message: string, options?: DomainErrorOptions) =>
  toHttpFailure(new DomainError(code, message, options), area);

describe("the error table", () => {
  test("storage answers with the spec's code texts", () => {
    expect(failureOf("validation_error", "storage", "name: too short")).toMatchObject({
      status: 400,
      body: { error: "validation_error" },
    });
    expect(failureOf("not_found", "storage", "stream orders does not exist").body).toEqual({ error: "not_found" });
    expect(failureOf("unauthorized", "storage", "missing credential").status).toBe(401);
  });

  test("storage conflicts and oversized values answer codes too, with the headers the error carries", () => {
    expect(failureOf("conflict", "storage", "at revision 7", { headers: { "x-current-revision": "7" } })).toEqual({
      status: 409,
      body: { error: "conflict" },
      headers: { "x-current-revision": "7" },
    });
    expect(failureOf("payload_too_large", "storage", "value is over 1 MiB")).toMatchObject({
      status: 413,
      body: { error: "payload_too_large" },
    });
    const fromProcedure = describeError(
      new TRPCError({ code: "CONFLICT", cause: new DomainError("conflict", "x", { headers: { "x-a": "1" } }) }),
      "storage.kv.keys.put",
    );
    expect(fromProcedure).toMatchObject({ status: 409, body: { error: "conflict" }, headers: { "x-a": "1" } });
  });

  test("gateways and secrets use the spec's sentences for missing things", () => {
    expect(failureOf("not_found", "gateway", "no gateway x").body).toEqual({
      error: "The requested resource does not exist",
    });
    expect(failureOf("not_found", "secrets", "no secret x").body).toEqual({ error: "resource not found" });
    expect(failureOf("internal_error", "secrets", "decrypt failed").body).toEqual({
      error: "error retrieving secret",
    });
  });

  test("metrics failures are {message, data: null}", () => {
    expect(failureOf("validation_error", "monitoring", "metrics are required")).toMatchObject({
      status: 400,
      body: { message: "metrics are required", data: null },
    });
    expect(failureOf("internal_error", "monitoring", "x").body).toEqual({ message: "oops", data: null });
  });

  test("an internal error never exposes its message", () => {
    const failure = failureOf("internal_error", "accounts", "connection to 10.0.0.5 refused, password=hunter2");
    expect(failure).toMatchObject({ status: 500, body: { error: "internal error" } });
  });

  test("details travel beside the error, even where the area answers the spec's fixed text", () => {
    const limit = { name: "kv_bytes", limit: 1024, plan: "free" };
    expect(
      failureOf("payload_too_large", "storage", "the account's KV storage is full", { details: { limit } }).body,
    ).toEqual({
      error: "payload_too_large",
      limit,
    });
    expect(failureOf("rate_limited", "runs", "too many runs", { details: { limit, error: "forged" } }).body).toEqual({
      error: "too many runs",
      limit,
    });
  });

  test("invalid input carries its problems as data beside the text that lists them, in every area's shape", () => {
    const problems = [
      { path: "steps.2.payload.url", message: "must be a URL" },
      { path: "", message: 'Unrecognized key: "x"' },
    ];
    const error = invalidInput(problems);
    expect(error.message).toBe('invalid input: steps.2.payload.url: must be a URL; body: Unrecognized key: "x"');
    expect(toHttpFailure(error, "flows")).toEqual({
      status: 400,
      body: { error: error.message, problems },
      headers: {},
    });
    // Storage answers the spec's code text, and names the fields all the same.
    expect(toHttpFailure(error, "storage").body).toEqual({ error: "validation_error", problems });
    expect(toHttpFailure(error, "monitoring").body).toEqual({ message: error.message, data: null, problems });
    // A webhook's fields read `body.<field>` in the text; the problem names the field itself.
    const field = invalidInput({ path: "note", message: "must be valid UTF-8" }, { within: "body" });
    expect(toHttpFailure(field, "ingress").body).toEqual({
      error: "invalid input: body.note: must be valid UTF-8",
      problems: [{ path: "note", message: "must be valid UTF-8" }],
    });
    // A refusal that names no field answers as it always has.
    expect(failureOf("validation_error", "accounts", "invalid code").body).toEqual({ error: "invalid code" });
  });

  test("rate limiting carries Retry-After in whole seconds", () => {
    expect(failureOf("rate_limited", "accounts", "too many attempts", { retryAfterSeconds: 2.2 })).toMatchObject({
      status: 429,
      headers: { "retry-after": "3" },
    });
  });
});

describe("describeError", () => {
  test("a domain error keeps its code and message", () => {
    const error = new TRPCError({ code: "INTERNAL_SERVER_ERROR", cause: new DomainError("conflict", "email exists") });
    expect(describeError(error, "accounts.signup")).toMatchObject({
      code: "conflict",
      status: 409,
      body: { error: "email exists" },
    });
  });

  test("a zod failure names the fields, not the schema internals", () => {
    const parsed = z
      .object({ email: z.email(), password: z.string().min(10) })
      .safeParse({ email: "x", password: "y" });
    const error = new TRPCError({ code: "BAD_REQUEST", cause: parsed.error });
    const failure = describeError(error, "accounts.signup");
    expect(failure.status).toBe(400);
    expect((failure.body as { error: string }).error).toMatch(/^invalid input: email: .+; password: .+$/);
    expect(failure.problems?.map(({ path }) => path)).toEqual(["email", "password"]);
    expect((failure.body as { problems: unknown }).problems).toEqual(failure.problems);
  });

  test("an unexpected throw is a 500 with nothing of the cause", () => {
    const error = new TRPCError({ code: "INTERNAL_SERVER_ERROR", cause: new Error("relation users does not exist") });
    expect(describeError(error, "secrets.get")).toMatchObject({
      code: "internal_error",
      status: 500,
      body: { error: "error retrieving secret" },
    });
    expect(describeError(error, "hub.nodes.create")).toMatchObject({
      message: "internal error",
      body: { error: "internal error" },
    });
  });

  test("adapter errors before any procedure map to the platform's codes", () => {
    expect(describeError(new TRPCError({ code: "NOT_FOUND", message: "Not found" }), undefined)).toMatchObject({
      status: 404,
      body: { error: "not found" },
    });
    expect(describeError(new TRPCError({ code: "PARSE_ERROR", message: "x" }), "storage.kv.put").status).toBe(400);
    expect(describeError(new TRPCError({ code: "UNSUPPORTED_MEDIA_TYPE", message: "x" }), undefined).status).toBe(415);
  });
});

describe("answerError, the plain routes' one way to answer an error", () => {
  test("a refusal is answered as the table says, with its headers, and not logged", async () => {
    const { logger, text: logged } = capturedLogger();
    const answer = answerError(new DomainError("rate_limited", "slow down", { retryAfterSeconds: 1.5 }), {
      area: "ingress",
      logger,
    });
    expect(answer.status).toBe(429);
    expect(answer.headers.get("retry-after")).toBe("2");
    expect(answer.headers.get("cache-control")).toBe("no-store");
    expect(await answer.json()).toEqual({ error: "slow down" });
    expect(logged()).toBe("");
  });

  test("a fault is a 500 that says nothing of its cause, which goes to the log with the request id", async () => {
    const { logger, text: logged } = capturedLogger();
    const answer = answerError(new Error("connection to 10.0.0.5 refused"), { area: "runs", logger, requestId: "r-1" });
    expect(answer.status).toBe(500);
    expect(await answer.json()).toEqual({ error: "internal error" });
    expect(logged()).toContain("connection to 10.0.0.5 refused");
    expect(logged()).toContain('"reqId":"r-1"');
  });

  test("an error's cause travels with it to the log, stack included", async () => {
    const { logger, text: logged } = capturedLogger();
    const cause = new Error("no listed key opens this value");
    answerError(new DomainError("internal_error", "secret x could not be opened", { cause }), {
      area: "secrets",
      logger,
    });
    expect(logged()).toContain("no listed key opens this value");
    expect(logged()).toContain("errors.test.ts");
  });

  test("every code has one HTTP status and one tRPC code, each tRPC code naming one domain code", () => {
    const trpcCodes = Object.values(ERRORS).map((entry) => entry.trpc);
    expect(new Set(trpcCodes).size).toBe(trpcCodes.length);
    for (const [code, { status }] of Object.entries(ERRORS)) {
      expect(failureOf(code as ErrorCode, "platform", "x").status).toBe(status);
    }
  });
});

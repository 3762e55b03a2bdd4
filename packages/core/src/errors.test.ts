import { describe, expect, test } from "bun:test";
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { DomainError, toHttpFailure } from "./errors.ts";
import { describeError } from "./trpc.ts";

describe("the error table", () => {
  test("storage answers with the spec's code texts", () => {
    expect(toHttpFailure("validation_error", "storage", "name: too short")).toMatchObject({
      status: 400,
      body: { error: "validation_error" },
    });
    expect(toHttpFailure("not_found", "storage", "stream orders does not exist").body).toEqual({ error: "not_found" });
    expect(toHttpFailure("unauthorized", "storage", "missing credential").status).toBe(401);
  });

  test("storage conflicts and oversized values answer codes too, with the headers the error carries", () => {
    expect(toHttpFailure("conflict", "storage", "at revision 7", undefined, { "x-current-revision": "7" })).toEqual({
      status: 409,
      body: { error: "conflict" },
      headers: { "x-current-revision": "7" },
    });
    expect(toHttpFailure("payload_too_large", "storage", "value is over 1 MiB")).toMatchObject({
      status: 413,
      body: { error: "payload_too_large" },
    });
    const fromProcedure = describeError(
      new TRPCError({ code: "CONFLICT", cause: new DomainError("conflict", "x", undefined, { "x-a": "1" }) }),
      "storage.kv.keys.put",
    );
    expect(fromProcedure).toMatchObject({ status: 409, body: { error: "conflict" }, headers: { "x-a": "1" } });
  });

  test("gateways and secrets use the spec's sentences for missing things", () => {
    expect(toHttpFailure("not_found", "gateway", "no gateway x").body).toEqual({
      error: "The requested resource does not exist",
    });
    expect(toHttpFailure("not_found", "secrets", "no secret x").body).toEqual({ error: "resource not found" });
    expect(toHttpFailure("internal_error", "secrets", "decrypt failed").body).toEqual({
      error: "error retrieving secret",
    });
  });

  test("metrics failures are {message, data: null}", () => {
    expect(toHttpFailure("validation_error", "monitoring", "metrics are required")).toMatchObject({
      status: 400,
      body: { message: "metrics are required", data: null },
    });
    expect(toHttpFailure("internal_error", "monitoring", "x").body).toEqual({ message: "oops", data: null });
  });

  test("an internal error never exposes its message", () => {
    const failure = toHttpFailure("internal_error", "accounts", "connection to 10.0.0.5 refused, password=hunter2");
    expect(failure).toMatchObject({ status: 500, body: { error: "internal error" } });
  });

  test("rate limiting carries Retry-After in whole seconds", () => {
    expect(toHttpFailure("rate_limited", "accounts", "too many attempts", 2.2)).toMatchObject({
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

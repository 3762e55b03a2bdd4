import { describe, expect, test } from "bun:test";
import { PlatformError } from "@platform/client";
import { problemOf } from "./problem.ts";

const invalid = (message: string, problems: { path: string; message: string }[]) =>
  new PlatformError(message, { status: 400, code: "validation_error", requestId: "r-1", problems });

describe("problemOf: an API failure as the console shows it", () => {
  test("a 400's fields come from its problems, not from its text", () => {
    // The text says one thing and the problems another: the fields follow the problems.
    const error = invalid("invalid input: text that is not parsed", [
      { path: "name", message: "must not be empty" },
      { path: "limit.time", message: "is required" },
    ]);
    expect(problemOf(error)).toEqual({
      message: "invalid input: text that is not parsed",
      fields: { name: "must not be empty", "limit.time": "is required" },
      status: 400,
    });
  });

  test("two problems of one field read as one; a problem of the whole input is no field", () => {
    const error = invalid("invalid input: …", [
      { path: "password", message: "must be at least 10 characters" },
      { path: "password", message: "must not be the email" },
      { path: "", message: 'Unrecognized key: "extra"' },
    ]);
    expect(problemOf(error).fields).toEqual({ password: "must be at least 10 characters; must not be the email" });
  });

  test("a refusal that names no field has none, and says what it says", () => {
    expect(problemOf(invalid("invalid code", []))).toEqual({ message: "invalid code", fields: {}, status: 400 });
    const forbidden = new PlatformError("may not", { status: 403, code: "forbidden", requestId: null });
    expect(problemOf(forbidden)).toMatchObject({ fields: {}, status: 403 });
    expect(problemOf(new Error("boom"))).toEqual({ message: "boom", fields: {}, status: 0 });
  });
});

describe("problemOf: what each kind of failure tells the person to do", () => {
  const failed = (status: number, message: string) =>
    new PlatformError(message, { status, code: "error", requestId: status === 0 ? null : "req-7" });

  test("no answer, a missing permission, too many attempts, a server failure", () => {
    expect(problemOf(failed(0, "network error: fetch failed")).message).toBe(
      "The platform cannot be reached. Check your connection and try again.",
    );
    expect(problemOf(failed(403, "missing permission secrets:write")).message).toBe(
      "Not allowed: missing permission secrets:write. Ask an owner or admin of the account for this permission.",
    );
    expect(problemOf(failed(429, "rate limit exceeded")).message).toBe(
      "Too many attempts: rate limit exceeded. Wait a moment and try again.",
    );
    // A server failure gives the request id to quote when asking for help.
    expect(problemOf(failed(500, "internal error")).message).toBe(
      "The platform failed (internal error); request req-7.",
    );
    // Another server's failure (a registry, an MCP server) is not the platform's: its text says which.
    expect(problemOf(failed(502, 'the tools of registry server "x" could not be read: refused')).message).toBe(
      'the tools of registry server "x" could not be read: refused',
    );
  });

  test("anything else thrown is shown by its message", () => {
    expect(problemOf("plain text")).toEqual({ message: "plain text", fields: {}, status: 0 });
  });
});

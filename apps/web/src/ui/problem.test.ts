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

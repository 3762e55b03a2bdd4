import { expect, test } from "bun:test";
import { redactSecrets } from "../engine/error-text.ts";
import { dataAttribute, TRACE_DATA_MAX_CHARS } from "./run-data.ts";

const secrets = { token: "sk_live_0123456789" };
const redact = (text: string, cut?: boolean) => redactSecrets(text, secrets, cut);

test("a run's data is its JSON, redacted of the run's secrets as its error texts are", () => {
  expect(dataAttribute({ auth: "Bearer sk_live_0123456789", n: 1 }, redact)).toBe(
    '{"auth":"Bearer [secret:token]","n":1}',
  );
  expect(dataAttribute(undefined, redact)).toBe("null");
});

test("longer data is cut to TRACE_DATA_MAX_CHARS and ends in …, never with part of a secret at the cut", () => {
  const long = dataAttribute({ text: "x".repeat(10_000) }, redact);
  expect(long.length).toBe(TRACE_DATA_MAX_CHARS + 1);
  expect(long.endsWith("x…")).toBe(true);
  // A secret the cut falls inside: its first characters are dropped, not shown.
  const before = TRACE_DATA_MAX_CHARS - '{"text":"'.length - 6;
  const straddling = dataAttribute({ text: `${"y".repeat(before)}sk_live_0123456789 and more` }, redact);
  expect(straddling).not.toContain("sk_liv");
  expect(straddling.endsWith("y…")).toBe(true);
});

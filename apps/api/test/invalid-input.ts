/**
 * The answer to invalid input, as a test expects it: `error` lists each problem as
 * `<path>: <message>` after `invalid input: ` (the body as a whole reads `body`), and
 * `problems` carries the same as data. A few tests spell the text out in full
 * (bad-input.test.ts, trpc-errors.test.ts); the rest build it here.
 */
export function invalidInput(...problems: [path: string, message: string][]): {
  error: string;
  problems: { path: string; message: string }[];
} {
  return {
    error: `invalid input: ${problems.map(([path, message]) => `${path || "body"}: ${message}`).join("; ")}`,
    problems: problems.map(([path, message]) => ({ path, message })),
  };
}

/**
 * A refusal's problems read back as the text that lists them: where a test pins the whole
 * text of a refusal with many problems, comparing this with `error` checks that the
 * problems carry the same, field by field.
 */
export function problemsAsText(body: { problems?: { path: string; message: string }[] }): string {
  return `invalid input: ${(body.problems ?? []).map((p) => `${p.path || "body"}: ${p.message}`).join("; ")}`;
}

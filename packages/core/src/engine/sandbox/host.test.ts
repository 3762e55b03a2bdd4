import { expect, test } from "bun:test";
import { QuickJsHost } from "./host.ts";

const limits = {
  memoryBytes: 16 * 1024 * 1024,
  stackBytes: 256 * 1024,
  timeoutMs: 300,
  logLines: 100,
  logChars: 16_384,
};
const input = JSON.stringify({ trigger: { id: 1, tags: ["a"] }, steps: { before: { ok: true } } });

test("failing runs release everything they held: the module stays in service", async () => {
  const host = new QuickJsHost();
  const failing = [
    "export default (input) => { throw new Error(input.trigger.id) }",
    "export default (input) => { for (;;) input.trigger.id++ }",
    "export default async (input) => { await null; for (;;) {} }",
    "export default (input) => Promise.reject(input)",
    "export default (input) => new Promise(() => input)",
    "export default (input) => { input.self = input; return input }",
    "export default (input) => { const f = (n) => f(n + 1) + 1; return f(0) }",
    "export default (",
    "export default { not: 'a function' }",
    "import x from 'y'; export default () => x",
  ];
  for (const code of failing) {
    expect((await host.evaluate(code, input, limits)).ok).toBe(false);
  }
  expect(await host.evaluate("export default (input) => input.steps.before", input, limits)).toEqual({
    ok: true,
    output: '{"ok":true}',
  });
  expect(host.loads).toBe(1);
});

test("a run that filled the memory is followed by a fresh instance, giving the memory back", async () => {
  const host = new QuickJsHost();
  const bomb = "export default () => { const kept = []; for (;;) kept.push(new Uint8Array(1 << 20)) }";
  expect(await host.evaluate(bomb, "null", limits)).toEqual({
    ok: false,
    message: "js: memory limit of 16 MB exceeded",
    retryable: false,
  });
  expect(await host.evaluate("export default () => 'after'", "null", limits)).toEqual({ ok: true, output: '"after"' });
  expect(host.loads).toBe(2);
});

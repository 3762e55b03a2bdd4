import { afterAll, describe, expect, test } from "bun:test";
import { failure } from "../test-fixtures.ts";
import { type CapturedLogs, createSandbox, type Sandbox } from "./index.ts";

const MB = 1024 * 1024;

const sandboxes: Sandbox[] = [];
function open(options: Partial<Parameters<typeof createSandbox>[0]> = {}): Sandbox {
  const sandbox = createSandbox({ memoryBytes: 64 * MB, timeoutMs: 1000, workers: 1, ...options });
  sandboxes.push(sandbox);
  return sandbox;
}

afterAll(async () => {
  await Promise.all(sandboxes.map((sandbox) => sandbox.close()));
});

/** After a failure, the same sandbox still answers. */
async function stillServes(sandbox: Sandbox) {
  expect(await sandbox.run("export default (input) => input.n * 2", { n: 21 })).toBe(42);
}

describe.each([
  ["on a Worker pool", 1],
  ["on the caller's thread", 0],
])("the js sandbox %s", (_, workers) => {
  const sandbox = open({ workers });

  test("runs the default export on the input and returns its result as JSON", async () => {
    const code = `export default (input) => ({
      greeting: "hello " + input.trigger.name,
      total: input.steps.items.output.reduce((sum, item) => sum + item.price, 0),
      when: new Date(0).toISOString(),
    })`;
    const input = { trigger: { name: "Ada" }, steps: { items: { output: [{ price: 2 }, { price: 3 }] } } };
    expect(await sandbox.run(code, input)).toEqual({
      greeting: "hello Ada",
      total: 5,
      when: "1970-01-01T00:00:00.000Z",
    });
  });

  test("awaits an async function and its promise chain", async () => {
    const code = `
      const double = async (n) => { await null; return n * 2; };
      export default async (input) => {
        const values = await Promise.all(input.map(double));
        return { values, sum: values.reduce((a, b) => a + b) };
      }`;
    expect(await sandbox.run(code, [1, 2, 3])).toEqual({ values: [2, 4, 6], sum: 12 });
  });

  test("an undefined result is null", async () => {
    expect(await sandbox.run("export default () => {}", {})).toBeNull();
  });

  test("no host objects: no process, Bun, fetch, require or timers (console only captures)", async () => {
    const code = `export default () => ["process", "Bun", "fetch", "require", "module", "setTimeout",
      "XMLHttpRequest", "WebAssembly", "std", "os"].filter((name) => typeof globalThis[name] !== "undefined")`;
    expect(await sandbox.run(code, null)).toEqual([]);
    const reach = await failure(sandbox.run("export default () => process.env", null));
    expect(reach.message).toBe("js: ReferenceError: 'process' is not defined");
  });

  test("console lines are captured with their level and formatted as console does, also when the code throws", async () => {
    const seen: CapturedLogs[] = [];
    const code = `export default (input) => {
      console.log("order", input.id, { total: 5 }, [1, "a"], null, undefined, 1.5, true, 10n, () => 1);
      console.info("info"); console.warn("careful"); console.debug(new TypeError("bad"));
      const self = {}; self.self = self; console.error(self);
      throw new Error("failed after logging");
    }`;
    const error = await failure(sandbox.run(code, { id: 7 }, { onLogs: (logs) => seen.push(logs) }));
    expect(error.message).toBe("js: Error: failed after logging");
    expect(seen).toHaveLength(1);
    const [logs] = seen as [CapturedLogs];
    expect(logs.dropped).toBe(0);
    expect(logs.lines.map(({ level, message }) => [level, message])).toEqual([
      ["log", 'order 7 {"total":5} [1,"a"] null undefined 1.5 true 10n [Function: anonymous]'],
      ["info", "info"],
      ["warn", "careful"],
      ["debug", "TypeError: bad"],
      ["error", "[object Object]"],
    ]);
    expect(logs.lines.every((line) => typeof line.at === "number" && line.at <= Date.now())).toBe(true);
  });

  test("console keeps its bounds: lines past them are counted, a line past the characters is cut", async () => {
    const bounded = open({ workers, logLines: 3, logChars: 10 });
    let logs: CapturedLogs | undefined;
    const code = "export default () => { for (let i = 0; i < 10000; i++) console.log('line ' + i); return 'done' }";
    expect(await bounded.run(code, null, { onLogs: (captured) => (logs = captured) })).toBe("done");
    expect(logs).toEqual({
      lines: [
        { level: "log", message: "line 0", at: expect.any(Number) },
        { level: "log", message: "line", at: expect.any(Number), cut: true },
      ],
      dropped: 9998,
    });
    let quiet: CapturedLogs | undefined;
    expect(await bounded.run("export default () => 1", null, { onLogs: (captured) => (quiet = captured) })).toBe(1);
    expect(quiet).toBeUndefined();
  });

  test("imports are refused", async () => {
    const error = await failure(sandbox.run("import fs from 'fs'; export default () => fs", null));
    expect(error.message).toBe("js: ReferenceError: could not load module 'fs'");
    expect(error.retryable).toBe(false);
  });

  test("one run cannot see what another left behind", async () => {
    await sandbox.run("export default () => { globalThis.leak = 'secret'; Array.prototype.evil = 1; }", null);
    expect(await sandbox.run("export default () => [typeof leak, [].evil]", null)).toEqual(["undefined", null]);
  });

  test("a runaway loop stops at the time limit and the sandbox keeps serving", async () => {
    const error = await failure(sandbox.run("export default () => { while (true) {} }", null, { timeoutMs: 200 }));
    expect(error.message).toBe("js: time limit of 200 ms exceeded");
    expect(error.retryable).toBe(false);
    await stillServes(sandbox);
  });

  test("a runaway loop after an await stops at the time limit too, and cannot be caught", async () => {
    const code = "export default async () => { await null; try { for (;;) {} } catch { return 'escaped' } }";
    expect((await failure(sandbox.run(code, null, { timeoutMs: 200 }))).message).toBe(
      "js: time limit of 200 ms exceeded",
    );
    await stillServes(sandbox);
  });

  test("a run's own time limit can only lower the configured one", async () => {
    const error = await failure(sandbox.run("export default () => { for (;;) {} }", null, { timeoutMs: 60_000 }));
    expect(error.message).toBe("js: time limit of 1000 ms exceeded");
  });

  test("a memory bomb stops at the memory limit and the sandbox keeps serving", async () => {
    const small = open({ workers, memoryBytes: 16 * MB, timeoutMs: 10_000 });
    const grow = "export default () => { const kept = []; for (;;) kept.push(new Uint8Array(1024 * 1024)) }";
    const error = await failure(small.run(grow, null));
    expect(error.message).toBe("js: memory limit of 16 MB exceeded");
    expect(error.retryable).toBe(false);
    await stillServes(small);
    const once = await failure(small.run("export default () => 'x'.repeat(64 * 1024 * 1024)", null));
    expect(once.message).toBe("js: memory limit of 16 MB exceeded");
    await stillServes(small);
  });

  test("deep recursion fails with a stack message, also where the host's stack runs out first", async () => {
    const recursion = await failure(sandbox.run("export default () => { const f = (n) => f(n + 1) + 1; f(0) }", null));
    expect(recursion.message).toBe("js: stack size limit exceeded (recursion too deep)");
    await stillServes(sandbox);
    const nested = "export default () => JSON.parse('['.repeat(200000) + ']'.repeat(200000))";
    expect((await failure(sandbox.run(nested, null))).message).toBe(
      "js: stack size limit exceeded (recursion too deep)",
    );
    await stillServes(sandbox);
  });

  test.each([
    ["export default () => { throw new TypeError('boom') }", "js: TypeError: boom", true],
    ["export default async () => { throw new Error('later') }", "js: Error: later", true],
    ["export default () => { throw 'plain' }", 'js: the function threw "plain"', true],
    ["export default () => { throw null }", "js: the function threw null", true],
    ["export default (", "js: SyntaxError: unexpected token in expression: ''", false],
    ["export const notDefault = 1", "js: the code must export a function: export default (input) => ...", false],
    ["export default 42", "js: the code must export a function: export default (input) => ...", false],
    [
      "export default () => new Promise(() => {})",
      "js: the returned promise never settled (the sandbox has no timers or I/O)",
      false,
    ],
    [
      "export default () => { const a = {}; a.self = a; return a }",
      "js: the result cannot be turned into JSON: TypeError: circular reference",
      false,
    ],
    ["throw new Error('at load')", "js: Error: at load", false],
  ])("%s fails with %p", async (code, message, retryable) => {
    const error = await failure(sandbox.run(code, { any: "input" }));
    expect(error.message).toBe(message);
    expect(error.retryable).toBe(retryable);
  });

  test("refuses code that is not text", async () => {
    const error = await failure(sandbox.run(undefined as unknown as string, null));
    expect(error.message).toBe("js: payload.code must be the module's source text");
  });
});

describe("the Worker pool's watchdog", () => {
  test("replaces a worker stuck in one long native operation past its deadline", async () => {
    // QuickJS polls its interrupt handler only every few thousand bytecodes: with a slow
    // native call in each iteration, that is tens of seconds; the watchdog does not wait for it
    const sandbox = open({ workers: 1, timeoutMs: 10_000, watchdogGraceMs: 200 });
    const stuck = "export default () => { for (;;) new Array(200000).fill(1) }";
    // the tasks sent after it (one waits in the stuck worker's own queue) are served all the same
    const stuckRun = failure(sandbox.run(stuck, null, { timeoutMs: 100 }));
    const others = Promise.all([1, 2, 3].map((n) => sandbox.run("export default (n) => n * 10", n)));
    expect((await stuckRun).message).toBe("js: time limit of 100 ms exceeded");
    expect(await others).toEqual([10, 20, 30]);
    await stillServes(sandbox);
  });

  test("runs evaluations side by side on several workers", async () => {
    const sandbox = open({ workers: 2 });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, n) => sandbox.run("export default async (n) => n * n", n)),
    );
    expect(results).toEqual(Array.from({ length: 20 }, (_, n) => n * n));
  });

  test("a closed sandbox refuses work", async () => {
    const sandbox = open({ workers: 1 });
    await sandbox.close();
    expect((await failure(sandbox.run("export default () => 1", null))).message).toBe("js: the sandbox is closed");
  });
});

/**
 * How long the embedded platform takes to start, side by side over source trees (this
 * checkout and others: `git worktree add /tmp/before <commit>`, then `bun install` there),
 * rounds alternating the trees, next to a trivial `Bun.serve` started the same way in every
 * round (this machine's speed moves from day to day; compare ratios).
 *
 *   bun bench/startup.ts [--trees /tmp/before,.] [--rounds 3]
 *
 * Per round, the trivial server's time to its first answer; per tree, the API as
 * `bun run start` runs it (without building the console), with NODE_ENV=production: `fresh`
 * in an empty data directory (PGlite created, every migration applied), then `restart` on
 * that same directory once it stopped; each the time from the spawn to the first ready
 * answer of `/readyz`, polled every 10 ms.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freeLoopbackPort } from "../packages/db/src/testing.ts";
import { flag, listFlag } from "./lib/args.ts";
import { printTable } from "./lib/table.ts";

const TREES = listFlag("trees", ["."]).map((tree) => resolve(tree));
const ROUNDS = flag("rounds", 3);

/** Milliseconds from spawning `command` in `cwd` until `path` answers 2xx; the process is then stopped. */
async function timeToReady(command: string[], cwd: string, env: Record<string, string>, path: string) {
  const port = await freeLoopbackPort();
  const started = performance.now();
  const child = Bun.spawn(command, {
    cwd,
    env: { ...process.env, NODE_ENV: "production", ...env, PORT: String(port) },
    stdout: "ignore",
    stderr: "ignore",
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${command.join(" ")} in ${cwd} exited with ${child.exitCode}`);
      const ready = await fetch(`http://127.0.0.1:${port}${path}`).then(
        (answer) => answer.ok,
        () => false,
      );
      if (ready) return performance.now() - started;
      if (performance.now() - started > 120_000) throw new Error(`${cwd} was not ready within 120 s`);
      await Bun.sleep(10);
    }
  } finally {
    child.kill("SIGTERM");
    await child.exited;
  }
}

const TRIVIAL = `Bun.serve({ port: Number(process.env.PORT), hostname: "127.0.0.1", fetch: () => new Response("ok") })`;

/** The embedded API of `tree` started in a fresh data directory, then again on it. */
async function startTwice(tree: string) {
  const dataDir = mkdtempSync(join(tmpdir(), "platform-startup-"));
  try {
    const api = ["bun", "apps/api/src/main.ts", "--mode=embedded"];
    const env = { DATA_DIR: dataDir, MCP_REGISTRY_URL: "http://127.0.0.1:9" };
    const fresh = await timeToReady(api, tree, env, "/readyz");
    const restart = await timeToReady(api, tree, env, "/readyz");
    return { fresh, restart };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const rows: string[][] = [];
const millis = (ms: number) => String(Math.round(ms));
for (let round = 1; round <= ROUNDS; round++) {
  // Each round starts with another tree: here a run's order changes what it measures.
  const order = TREES.map((_, i) => TREES[(i + round - 1) % TREES.length] as string);
  const trivial = await timeToReady(["bun", "-e", TRIVIAL], ".", {}, "/");
  for (const tree of order) {
    const { fresh, restart } = await startTwice(tree);
    rows.push([`round ${round}: ${tree}`, millis(trivial), millis(fresh), millis(restart)]);
  }
}
printTable(
  [
    ["what", 44],
    ["trivial ms", 11],
    ["fresh ms", 9],
    ["restart ms", 11],
  ],
  rows,
);

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createBroker } from "@platform/core";
import type { DatabaseHandle } from "@platform/db";
import { createScratchPostgres, freeLoopbackPort, testEnv } from "@platform/db/testing";

const main = new URL("../src/main.ts", import.meta.url).pathname;
const fixture = new URL("./fixture-worker.ts", import.meta.url).pathname;

/** A child process whose stdout lines are collected as they arrive. */
function spawn(command: string[], env: Record<string, string>) {
  // Only the settings given: the test's own DATABASE_URL and REDIS_URL must not leak in.
  const child = Bun.spawn([process.execPath, ...command], {
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const lines: string[] = [];
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of child.stdout) {
      buffered += decoder.decode(chunk, { stream: true });
      const parts = buffered.split("\n");
      buffered = parts.pop() ?? "";
      lines.push(...parts);
    }
  })();
  return { child, lines, reading };
}

async function until<T>(find: () => T | undefined | Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await Bun.sleep(20);
  }
}

/** The health port the worker logged at start (pino JSON on stdout). */
const loggedHealthPort = (lines: string[]) =>
  until(() => {
    for (const line of lines) {
      if (!line.startsWith("{")) continue;
      const record = JSON.parse(line) as { msg?: string; healthPort?: number };
      if (record.msg === "worker running") return record.healthPort;
    }
    return undefined;
  });

describe("the worker process", () => {
  test("a bad setting stops start-up with one line naming the variable", async () => {
    const { child } = spawn([main], { WORKER_CONCURRENCY: "lots" });
    expect(await child.exited).toBe(2);
    const stderr = (await new Response(child.stderr).text()).trim();
    expect(stderr).toContain("WORKER_CONCURRENCY");
    expect(stderr.split("\n")).toHaveLength(1);
  });

  test("without DATABASE_URL and REDIS_URL it refuses to start, so it never shares an embedded PGlite", async () => {
    const { child } = spawn([main], { DATA_DIR: "./data" });
    expect(await child.exited).toBe(2);
    const stderr = (await new Response(child.stderr).text()).trim();
    expect(stderr).toContain("DATABASE_URL");
    expect(stderr).toContain("REDIS_URL");
    expect(stderr.split("\n")).toHaveLength(1);
  });
});

describe.skipIf(!testEnv.DATABASE_URL || !testEnv.REDIS_URL)(
  `the worker process on PostgreSQL and Redis${testEnv.DATABASE_URL && testEnv.REDIS_URL ? "" : " (skipped: DATABASE_URL and REDIS_URL are both needed)"}`,
  () => {
    let scratch: Awaited<ReturnType<typeof createScratchPostgres>>;
    beforeAll(async () => {
      scratch = await createScratchPostgres();
    });
    afterAll(async () => {
      await scratch?.drop();
    });

    test("reports healthy and exits 0 on SIGTERM", async () => {
      const { child, lines } = spawn([main], {
        DATABASE_URL: scratch.url,
        REDIS_URL: testEnv.REDIS_URL as string,
        WORKER_HEALTH_PORT: "0",
        LOG_LEVEL: "info",
      });
      const port = await loggedHealthPort(lines);
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: "ok", checks: { database: "ok", broker: "ok" } });
      child.kill("SIGTERM");
      expect(await child.exited).toBe(0);
    }, 30_000);

    test("answers 503 while its broker is unreachable", async () => {
      const { child, lines } = spawn([main], {
        DATABASE_URL: scratch.url,
        REDIS_URL: `redis://127.0.0.1:${await freeLoopbackPort()}`,
        WORKER_HEALTH_PORT: "0",
        LOG_LEVEL: "info",
      });
      try {
        const port = await loggedHealthPort(lines);
        const health = await fetch(`http://127.0.0.1:${port}/healthz`);
        expect(health.status).toBe(503);
        expect(await health.json()).toEqual({
          status: "unavailable",
          checks: { database: "ok", broker: "unavailable" },
        });
      } finally {
        child.kill("SIGTERM");
        expect(await child.exited).toBe(0);
      }
    }, 30_000);
  },
);

describe.skipIf(!testEnv.DATABASE_URL || !testEnv.REDIS_URL)(
  `two worker processes on Redis${testEnv.DATABASE_URL && testEnv.REDIS_URL ? "" : " (skipped: DATABASE_URL and REDIS_URL are both needed)"}`,
  () => {
    test("one is killed with SIGKILL while it holds entries; the survivor takes every entry to completion exactly once", async () => {
      const redisUrl = testEnv.REDIS_URL as string;
      const scratch = await createScratchPostgres();
      // The test's own view of the queue; the Redis adapter never touches the database handle.
      const broker = await createBroker({ redisUrl, database: {} as DatabaseHandle });
      const scope = `sigkill-${crypto.randomUUID()}`;
      const stream = "jobs";
      const total = 200;
      const env = {
        DATABASE_URL: scratch.url,
        REDIS_URL: redisUrl,
        WORKER_CONCURRENCY: "4",
        WORKER_HEALTH_PORT: "0",
        LOG_LEVEL: "warn",
      };
      const victim = spawn([fixture, scope, stream, "40", "victim"], env);
      const survivor = spawn([fixture, scope, stream, "40", "survivor"], env);
      try {
        const events = (worker: typeof victim) =>
          worker.lines
            .filter((l) => l.startsWith("EVENT "))
            .map((l) => JSON.parse(l.slice(6)) as { event: string; n: number; attempt: number });
        await until(() =>
          events(victim).some((e) => e.event === "ready") && events(survivor).some((e) => e.event === "ready")
            ? true
            : undefined,
        );
        for (let n = 0; n < total; n++) await broker.append(scope, stream, JSON.stringify({ n }));

        // Kill the victim in the middle of its work: it has entries started and not completed.
        const heldByVictim = await until(() => {
          const seen = events(victim);
          const finished = new Set(seen.filter((e) => e.event !== "started").map((e) => e.n));
          const held = seen.filter((e) => e.event === "started" && !finished.has(e.n)).map((e) => e.n);
          return held.length > 0 && finished.size >= 5 ? held : undefined;
        });
        victim.child.kill("SIGKILL");
        await victim.child.exited;
        await victim.reading;

        // Every entry ends up done once, by the first run that finished it.
        await until(async () => {
          const keys: string[] = [];
          let cursor: string | undefined;
          do {
            const page = await broker.kvKeys(scope, "done", { cursor, limit: 500 });
            keys.push(...page.keys);
            cursor = page.next ?? undefined;
          } while (cursor);
          return keys.length === total ? true : undefined;
        }, 40_000);
        await until(
          async () => ((await broker.pendingCount(scope, stream, "fixture")) === 0 ? true : undefined),
          20_000,
        );

        const completions = [...events(victim), ...events(survivor)]
          .filter((e) => e.event === "completed")
          .map((e) => e.n);
        // A SIGKILL can land between an entry's side effect and the victim's "completed" line,
        // so the lines may miss the victim's last completions (the done keys above count them
        // all); no entry may appear as completed twice.
        expect(new Set(completions).size).toBe(completions.length);
        expect(completions.length).toBeGreaterThanOrEqual(total - heldByVictim.length);
        // What the victim held when it died was taken over and finished by the survivor.
        const victimCompleted = new Set(
          events(victim)
            .filter((e) => e.event === "completed")
            .map((e) => e.n),
        );
        for (const n of heldByVictim.filter((n) => !victimCompleted.has(n))) {
          expect((await broker.kvGet(scope, "done", String(n)))?.value).toBe("survivor");
          expect(events(survivor).some((e) => e.event === "started" && e.n === n && e.attempt >= 2)).toBe(true);
        }

        survivor.child.kill("SIGTERM");
        expect(await survivor.child.exited).toBe(0);
      } finally {
        victim.child.kill("SIGKILL");
        survivor.child.kill("SIGKILL");
        await broker.deleteStream(scope, stream);
        await broker.kvDeleteBucket(scope, "done");
        await broker.close();
        await scratch.drop();
      }
    }, 60_000);
  },
);

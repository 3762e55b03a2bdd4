/**
 * A real worker process for the tests: the app's own wiring (config from the
 * environment, database, services, runtime, health, signals) with one test consumer.
 * Usage: bun fixture-worker.ts <scope> <stream> <handlerMs> <tag>
 * Each handled entry is reported on stdout as `EVENT {"event":...,"n":...}`.
 */
import { defineConsumer } from "@platform/core";
import { z } from "zod";
import { loadWorkerConfig } from "../src/config.ts";
import { exitOnSignals, runWorkerProcess } from "../src/process.ts";

export const fixtureConsumer = (scope: string, stream: string) =>
  defineConsumer({
    name: "fixture",
    scope,
    stream,
    schema: z.object({ n: z.number().int() }),
    visibilityTimeoutMs: 1500,
    retry: { maxAttempts: 5, backoffMs: 50 },
  });

if (import.meta.main) {
  const [scope = "", stream = "", handlerMs = "0", tag = "worker"] = Bun.argv.slice(2);
  const emit = (event: Record<string, unknown>) => process.stdout.write(`EVENT ${JSON.stringify({ ...event, tag })}\n`);
  const config = loadWorkerConfig(process.env);
  const worker = await runWorkerProcess(config, ({ broker }) => [
    {
      definition: fixtureConsumer(scope, stream),
      handle: async (payload, { attempt }) => {
        const { n } = payload as { n: number };
        emit({ event: "started", n, attempt });
        await Bun.sleep(Number(handlerMs));
        // The completion record is the idempotency key: only the first run to finish writes it.
        const done = await broker.kvCompareAndSet(scope, "done", String(n), tag, 0);
        emit({ event: done.ok ? "completed" : "already-done", n, attempt });
      },
    },
  ]);
  exitOnSignals(worker, config);
  emit({ event: "ready", healthPort: worker.healthPort });
}

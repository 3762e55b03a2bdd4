import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { brokerBackends, randomScope, type TestBroker } from "../broker/test-backends.ts";
import { createLogger } from "../logger.ts";
import { createMetricsRecorder, type MetricsRecorder } from "./recorder.ts";

const logger = createLogger({ level: "silent", name: "recorder-test" });

for (const backend of brokerBackends()) {
  describe.skipIf(Boolean(backend.skip))(
    `metrics recorder on ${backend.name}${backend.skip ? ` (skipped: ${backend.skip})` : ""}`,
    () => {
      let opened: TestBroker;
      const recorders: MetricsRecorder[] = [];
      const recorder = (flushMs = 60_000) => {
        const created = createMetricsRecorder({ broker: opened.broker, logger, flushMs });
        recorders.push(created);
        return created;
      };

      beforeAll(async () => {
        opened = await backend.open();
      }, 60_000);
      afterAll(async () => {
        for (const created of recorders) await created.close();
        await opened?.close();
      });

      test("a process reads its own increments at once, and every process reads them once written", async () => {
        const account = randomScope("acct");
        const one = recorder();
        const two = recorder();
        one.count(account, "runs.started");
        one.count(account, "runs.started", 4);
        two.count(account, "runs.started", 2);
        expect(await one.read(account, "runs.started")).toBe(5);
        // `two` has not written yet: `one` sees only what reached the broker.
        expect(await two.read(account, "runs.started")).toBe(7);
        expect(await one.read(account, "runs.started")).toBe(7);
      });

      test("counters are kept apart per account, per metric and per stream; negative steps subtract", async () => {
        const a = randomScope("acct");
        const b = randomScope("acct");
        const metrics = recorder();
        metrics.countStream(a, "stream.messages", "orders", 3);
        metrics.countStream(a, "stream.bytes", "orders", 300);
        metrics.countStream(a, "stream.messages", "audit");
        metrics.count(a, "kv.keys", 5);
        metrics.count(a, "kv.keys", -2);
        metrics.count(b, "kv.keys");
        expect(await metrics.read(a, "stream.messages", "orders")).toBe(3);
        expect(await metrics.read(a, "stream.bytes", "orders")).toBe(300);
        expect(await metrics.read(a, "stream.messages", "audit")).toBe(1);
        expect(await metrics.read(a, "kv.keys")).toBe(3);
        expect(await metrics.read(b, "kv.keys")).toBe(1);
        expect(await metrics.read(b, "runs.failed")).toBe(0);
      });

      test("the timer writes increments without anyone asking, and close writes the rest", async () => {
        const account = randomScope("acct");
        const ticking = recorder(20);
        ticking.count(account, "webhooks.received", 2);
        const reader = recorder();
        for (let i = 0; i < 100 && (await reader.read(account, "webhooks.received")) !== 2; i++) await Bun.sleep(20);
        expect(await reader.read(account, "webhooks.received")).toBe(2);

        const closing = recorder();
        closing.count(account, "webhooks.received", 3);
        await closing.close();
        expect(await reader.read(account, "webhooks.received")).toBe(5);
      });
    },
  );
}

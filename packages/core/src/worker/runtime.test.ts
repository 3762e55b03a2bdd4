import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { z } from "zod";
import type { Broker, DeliveredEntry } from "../broker/port.ts";
import { brokerBackends, eventually, randomScope, type TestBroker } from "../broker/test-backends.ts";
import { createLogger } from "../logger.ts";
import { type ConsumerDefinition, type ConsumerHandler, defineConsumer, scopeOf } from "./catalog.ts";
import { deadLetterCounter, readDeadLetters } from "./dead-letter.ts";
import { startWorkerRuntime, type WorkerRuntime } from "./runtime.ts";

const logger = createLogger({ level: "silent", name: "worker-test" });
const jobSchema = z.object({ n: z.number().int() });

/** A consumer of its own (fresh scope) with quick timeouts, so retries and claims happen fast. */
function jobConsumer(overrides: Partial<ConsumerDefinition<typeof jobSchema>> = {}) {
  return defineConsumer({
    name: "jobs",
    stream: "jobs",
    scope: randomScope("worker"),
    schema: jobSchema,
    visibilityTimeoutMs: 400,
    retry: { maxAttempts: 3, backoffMs: 20 },
    ...overrides,
  });
}

/** Appends a job for a consumer, as a producer of its stream would. */
const enqueue = (broker: Broker, consumer: ConsumerDefinition, payload: z.input<typeof jobSchema>) =>
  broker.append(scopeOf(consumer), consumer.stream, JSON.stringify(payload));

/** The Postgres adapter is the same on both servers; the runtime runs on PGlite and Redis. */
const backends = brokerBackends().filter((b) => b.name !== "postgres");

for (const backend of backends) {
  describe.skipIf(Boolean(backend.skip))(
    `worker runtime on ${backend.name}${backend.skip ? ` (skipped: ${backend.skip})` : ""}`,
    () => {
      let opened: TestBroker;
      let broker: Broker;
      const runtimes: WorkerRuntime[] = [];

      beforeAll(async () => {
        opened = await backend.open();
        broker = opened.broker;
      }, 60_000);
      afterAll(async () => {
        await Promise.all(runtimes.map((r) => r.stop(100)));
        await opened?.close();
      });

      function start(
        definition: ConsumerDefinition<typeof jobSchema>,
        handle: ConsumerHandler<typeof jobSchema>,
        concurrency = 1,
      ): WorkerRuntime {
        const runtime = startWorkerRuntime({
          broker,
          logger,
          consumers: [{ definition, handle: handle as ConsumerHandler }],
          concurrency,
          pollMs: 100,
        });
        runtimes.push(runtime);
        return runtime;
      }

      test("members of two runtimes process every entry exactly once", async () => {
        // Exactly once while every member heartbeats within the visibility timeout: the 400 ms
        // the other tests use let a CI machine's loaded PGlite delay a heartbeat past it, and
        // the other runtime rightly claimed an entry still being acknowledged.
        const consumer = jobConsumer({ visibilityTimeoutMs: 5_000 });
        const seen: number[] = [];
        const handle: ConsumerHandler<typeof jobSchema> = async ({ n }) => {
          seen.push(n);
        };
        const one = start(consumer, handle, 3);
        const two = start(consumer, handle, 2);
        for (let n = 0; n < 60; n++) await enqueue(broker, consumer, { n });

        await eventually(() => seen.length >= 60);
        await Promise.all([one.stop(), two.stop()]);
        expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, n) => n));
        expect((one.stats().jobs?.processed ?? 0) + (two.stats().jobs?.processed ?? 0)).toBe(60);
        expect(await broker.pendingCount(consumer.scope as string, consumer.stream, consumer.name)).toBe(0);
        expect(one.running).toBe(false);
      });

      test("a member of capacity 4 handles four entries at once, and settles each on its own", async () => {
        const consumer = jobConsumer({ capacity: 4, visibilityTimeoutMs: 60_000 });
        let release!: () => void;
        const gate = new Promise<void>((resolve) => {
          release = resolve;
        });
        const waiting: number[] = [];
        const done: number[] = [];
        for (let n = 0; n < 4; n++) await enqueue(broker, consumer, { n });
        const runtime = start(consumer, async ({ n }, { attempt }) => {
          waiting.push(n);
          await gate;
          if (n === 3 && attempt === 1) throw new Error("flaky");
          done.push(n);
        });
        // One member holds all four at the same time: none could finish before the gate opened.
        await eventually(() => waiting.length === 4);
        release();
        await eventually(() => done.length === 4);
        await runtime.stop();
        expect([...done].sort()).toEqual([0, 1, 2, 3]);
        expect(runtime.stats().jobs).toMatchObject({ processed: 4, retried: 1, inFlight: 0 });
      });

      test("a slow entry holds one slot, not the member: the others keep flowing past it", async () => {
        const consumer = jobConsumer({ capacity: 2, visibilityTimeoutMs: 60_000 });
        let release!: () => void;
        const gate = new Promise<void>((resolve) => {
          release = resolve;
        });
        const done: number[] = [];
        await enqueue(broker, consumer, { n: 0 });
        const runtime = start(consumer, async ({ n }) => {
          if (n === 0) await gate;
          done.push(n);
        });
        for (let n = 1; n <= 6; n++) await enqueue(broker, consumer, { n });
        await eventually(() => done.length === 6);
        expect(done).not.toContain(0);
        release();
        await eventually(() => done.length === 7);
        await runtime.stop();
        expect(runtime.stats().jobs).toMatchObject({ processed: 7, inFlight: 0 });
      });

      test("poison payloads go to the dead-letter stream, are counted, and do not block the stream", async () => {
        const consumer = jobConsumer();
        const scope = consumer.scope as string;
        const handled: number[] = [];
        await broker.append(scope, consumer.stream, "not json");
        await broker.append(scope, consumer.stream, JSON.stringify({ n: "seven" }));
        await enqueue(broker, consumer, { n: 1 });
        const runtime = start(consumer, async ({ n }) => {
          handled.push(n);
        });

        await eventually(() => handled.length === 1);
        await eventually(async () => (await broker.counter(scope, deadLetterCounter(consumer))) === 2);
        await runtime.stop();
        const letters = await readDeadLetters(broker, consumer);
        expect(letters.map((l) => l.payload)).toEqual(["not json", JSON.stringify({ n: "seven" })]);
        expect(letters.every((l) => l.error.startsWith("invalid payload") && l.consumer === "jobs")).toBe(true);
        expect(runtime.stats().jobs?.deadLettered).toBe(2);
        expect(await broker.pendingCount(scope, consumer.stream, consumer.name)).toBe(0);
      });

      test("a failing handler is retried with its attempt number, and succeeds", async () => {
        const consumer = jobConsumer();
        const attempts: number[] = [];
        const runtime = start(consumer, async (_, { attempt }) => {
          attempts.push(attempt);
          if (attempt < 3) throw new Error(`flaky ${attempt}`);
        });
        await enqueue(broker, consumer, { n: 1 });

        await eventually(() => runtime.stats().jobs?.processed === 1);
        await runtime.stop();
        expect(attempts).toEqual([1, 2, 3]);
        expect(runtime.stats().jobs?.retried).toBe(2);
        expect(await readDeadLetters(broker, consumer)).toEqual([]);
      });

      test("the heartbeat never touches an entry being given back for a retry (that would postpone the retry)", async () => {
        const consumer = jobConsumer({ visibilityTimeoutMs: 60, retry: { maxAttempts: 2, backoffMs: 20 } });
        const releasing = new Set<string>();
        const touchedWhileReleasing: string[] = [];
        // A slow release, so that heartbeats (every 20 ms here) fall inside it.
        const spy = new Proxy(broker, {
          get(target, property, receiver) {
            const value = Reflect.get(target, property, receiver);
            if (typeof value !== "function") return value;
            if (property === "release") {
              return async (...args: Parameters<Broker["release"]>) => {
                const ids = args[4];
                for (const id of ids) releasing.add(id);
                try {
                  await Bun.sleep(100);
                  return await target.release(...args);
                } finally {
                  for (const id of ids) releasing.delete(id);
                }
              };
            }
            if (property === "touch") {
              return (...args: Parameters<Broker["touch"]>) => {
                touchedWhileReleasing.push(...args[4].filter((id) => releasing.has(id)));
                return target.touch(...args);
              };
            }
            return value.bind(target);
          },
        });
        const runtime = startWorkerRuntime({
          broker: spy,
          logger,
          consumers: [
            {
              definition: consumer,
              handle: async (_, { attempt }) => {
                if (attempt === 1) throw new Error("try again");
              },
            },
          ],
          pollMs: 100,
        });
        runtimes.push(runtime);
        await enqueue(broker, consumer, { n: 1 });

        await eventually(() => runtime.stats().jobs?.processed === 1);
        await runtime.stop();
        expect(runtime.stats().jobs?.retried).toBe(1);
        expect(touchedWhileReleasing).toEqual([]);
      });

      test("a handler failing past its retries is dead-lettered with its error, and the stream moves on", async () => {
        const consumer = jobConsumer({ retry: { maxAttempts: 2, backoffMs: 10 } });
        const done: number[] = [];
        const runtime = start(consumer, async ({ n }) => {
          if (n === 0) throw new Error("always broken");
          done.push(n);
        });
        await enqueue(broker, consumer, { n: 0 });
        await enqueue(broker, consumer, { n: 1 });

        await eventually(() => runtime.stats().jobs?.deadLettered === 1 && done.length === 1);
        await runtime.stop();
        const [letter] = await readDeadLetters(broker, consumer);
        expect(letter).toMatchObject({ error: "always broken", deliveries: 2, payload: JSON.stringify({ n: 0 }) });
      });

      test("an entry delivered more often than its attempts (its workers crashed) is dead-lettered without running", async () => {
        const consumer = jobConsumer({ retry: { maxAttempts: 2, backoffMs: 10 } });
        const scope = consumer.scope as string;
        await broker.ensureGroup(scope, consumer.stream, consumer.name);
        await enqueue(broker, consumer, { n: 1 });
        // Three members take the entry and die holding it.
        const [entry] = await broker.readGroup(scope, consumer.stream, consumer.name, "crashed-1");
        if (!entry) throw new Error("nothing read");
        await broker.release(scope, consumer.stream, consumer.name, "crashed-1", [entry.id]);
        await broker.claimIdle(scope, consumer.stream, consumer.name, "crashed-2", 60_000, 1);
        await broker.release(scope, consumer.stream, consumer.name, "crashed-2", [entry.id]);

        let ran = false;
        const runtime = start(consumer, async () => {
          ran = true;
        });
        await eventually(() => runtime.stats().jobs?.deadLettered === 1);
        await runtime.stop();
        expect(ran).toBe(false);
        const [letter] = await readDeadLetters(broker, consumer);
        expect(letter?.deliveries).toBe(3);
        expect(letter?.error).toContain("no outcome");
      });

      test("a consumer of several streams (a partitioned queue) is served fairly by each member, and each entry settles on its own stream", async () => {
        const scope = randomScope("partitions");
        const queues = [0, 1, 2, 3].map((p) => ({ scope: `${scope}-${p}`, stream: "jobs" }));
        const consumer = jobConsumer({ queues, capacity: 4, visibilityTimeoutMs: 60_000 });
        // A backlog on every stream, the first stream's twice as long.
        for (const [p, queue] of queues.entries()) {
          for (let i = 0; i < (p === 0 ? 40 : 20); i++) {
            await broker.append(queue.scope, queue.stream, JSON.stringify({ n: p * 100 + i }));
          }
        }
        const order: number[] = [];
        const entryIds = new Set<string>();
        const runtime = start(consumer, async ({ n }, { entryId, attempt }) => {
          order.push(n);
          entryIds.add(entryId);
          // One failure, to see a retry find its way back to its own stream.
          if (n === 205 && attempt === 1) throw new Error("flaky");
          await Bun.sleep(1);
        });
        await eventually(() => order.length >= 101, 15_000);
        await runtime.stop();
        expect(new Set(order).size).toBe(100);
        // Fair: the first 20 taken came from every stream, not the first one's backlog alone.
        expect(new Set(order.slice(0, 20).map((n) => Math.floor(n / 100)))).toEqual(new Set([0, 1, 2, 3]));
        // Entry ids name their stream, so ids equal on two streams never meet.
        expect([...entryIds].every((id) => /^[0-3]:/.test(id))).toBe(true);
        for (const queue of queues) expect(await broker.pendingCount(queue.scope, queue.stream, consumer.name)).toBe(0);
      });

      test("entries a dead member left on one of several streams are all taken back in one claim", async () => {
        const scope = randomScope("partitions");
        const queues = [0, 1, 2, 3].map((p) => ({ scope: `${scope}-${p}`, stream: "jobs" }));
        const consumer = jobConsumer({ queues, capacity: 16, visibilityTimeoutMs: 300 });
        const [first] = queues as [{ scope: string; stream: string }];
        await broker.ensureGroup(first.scope, first.stream, consumer.name);
        for (let n = 0; n < 16; n++) await broker.append(first.scope, first.stream, JSON.stringify({ n }));
        // A member takes all sixteen and dies holding them.
        const taken = await broker.readGroup(first.scope, first.stream, consumer.name, "crashed", { count: 16 });
        expect(taken).toHaveLength(16);
        // The live member's claims, as the broker answered them.
        const claims: number[] = [];
        const watched = new Proxy(broker, {
          get(target, property, receiver) {
            const value = Reflect.get(target, property, receiver);
            if (typeof value !== "function") return value;
            if (property !== "claimIdle") return value.bind(target);
            return async (...args: unknown[]) => {
              const claimed = (await value.apply(target, args)) as DeliveredEntry[];
              if (claimed.length > 0) claims.push(claimed.length);
              return claimed;
            };
          },
        });
        const seen = new Set<number>();
        const runtime = startWorkerRuntime({
          broker: watched,
          logger,
          consumers: [
            {
              definition: consumer,
              handle: (async ({ n }: { n: number }) => {
                seen.add(n);
              }) as ConsumerHandler,
            },
          ],
          pollMs: 100,
        });
        runtimes.push(runtime);
        await eventually(() => seen.size === 16);
        await runtime.stop();
        // Not a share per stream: the stream that holds them gives all sixteen at once.
        expect(claims).toEqual([16]);
      });

      test("a member with nothing to do still takes an entry appended to any of its streams at once", async () => {
        const scope = randomScope("partitions");
        const queues = [0, 1, 2, 3, 4, 5, 6, 7].map((p) => ({ scope: `${scope}-${p}`, stream: "jobs" }));
        const consumer = jobConsumer({ queues });
        const seen: number[] = [];
        const runtime = start(consumer, async ({ n }) => {
          seen.push(n);
        });
        for (const [p, queue] of queues.entries()) {
          await Bun.sleep(30);
          await broker.append(queue.scope, queue.stream, JSON.stringify({ n: p }));
          await eventually(() => seen.includes(p), 2000);
        }
        await runtime.stop();
        expect(seen.sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      });

      test("stop lets the entries in flight finish and reads nothing more: the rest wait for another worker, whole", async () => {
        // One attempt only: an entry counted as delivered twice would be dead-lettered without running.
        const consumer = jobConsumer({
          capacity: 2,
          visibilityTimeoutMs: 60_000,
          retry: { maxAttempts: 1, backoffMs: 10 },
        });
        let release!: () => void;
        const gate = new Promise<void>((resolve) => {
          release = resolve;
        });
        const firstHandled: number[] = [];
        let started = 0;
        for (let n = 0; n < 5; n++) await enqueue(broker, consumer, { n });
        const first = start(consumer, async ({ n }) => {
          started++;
          await gate;
          firstHandled.push(n);
        });
        await eventually(() => started === 2);

        const stopping = first.stop(30_000);
        expect(first.running).toBe(false);
        release();
        await stopping;
        expect([...firstHandled].sort()).toEqual([0, 1]);

        const secondHandled: { n: number; attempt: number }[] = [];
        const second = start(consumer, async ({ n }, { attempt }) => {
          secondHandled.push({ n, attempt });
        });
        await eventually(() => secondHandled.length === 3);
        await second.stop();
        expect(second.stats().jobs?.deadLettered).toBe(0);
        expect(secondHandled).toEqual([
          { n: 2, attempt: 1 },
          { n: 3, attempt: 1 },
          { n: 4, attempt: 1 },
        ]);
      });

      test("entries a read brings in after the stop began are handed to another worker at once, unrun", async () => {
        const consumer = jobConsumer({ visibilityTimeoutMs: 60_000 });
        const scope = consumer.scope as string;
        let ran = false;
        // A long poll: the member is still in its blocking read when the grace period ends.
        const runtime = startWorkerRuntime({
          broker,
          logger,
          consumers: [
            {
              definition: consumer,
              handle: async () => {
                ran = true;
              },
            },
          ],
          pollMs: 10_000,
        });
        runtimes.push(runtime);
        await runtime.stop(0);
        await enqueue(broker, consumer, { n: 7 });

        let rescued: DeliveredEntry[] = [];
        await eventually(async () => {
          rescued = await broker.claimIdle(scope, consumer.stream, consumer.name, "rescuer", 60_000, 1);
          return rescued.length === 1;
        });
        expect(rescued[0]?.payload).toBe(JSON.stringify({ n: 7 }));
        expect(ran).toBe(false);
      });

      test("when the grace period runs out, the handler is aborted and its entry goes to another worker", async () => {
        const consumer = jobConsumer({ visibilityTimeoutMs: 60_000 });
        let aborted = false;
        let started = false;
        await enqueue(broker, consumer, { n: 42 });
        const stuck = start(consumer, async (_, { signal }) => {
          started = true;
          await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));
          aborted = true;
          throw signal.reason;
        });
        await eventually(() => started);
        await stuck.stop(50);
        expect(aborted).toBe(true);

        const rescued: { n: number; attempt: number }[] = [];
        const rescuer = start(consumer, async ({ n }, { attempt }) => {
          rescued.push({ n, attempt });
        });
        await eventually(() => rescued.length === 1);
        await rescuer.stop();
        expect(rescued).toEqual([{ n: 42, attempt: 2 }]);
        expect(stuck.stats().jobs?.processed).toBe(0);
      });
    },
  );
}

describe("the runtime's catalog", () => {
  test("two consumers with one name are refused", () => {
    const consumer = jobConsumer();
    const handle = async () => {};
    expect(() =>
      startWorkerRuntime({
        broker: {} as Broker,
        logger,
        consumers: [
          { definition: consumer, handle },
          { definition: consumer, handle },
        ],
      }),
    ).toThrow(/two consumers are named jobs/);
  });
});

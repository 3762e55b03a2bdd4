import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomUUID } from "node:crypto";
import type { Broker } from "../broker/port.ts";
import { brokerBackends, type TestBroker } from "../broker/test-backends.ts";
import { createRateTaker, leaseOf } from "./rate-taker.ts";

/** Takes `count` calls at once (one turn of the event loop) and says how many were allowed. */
async function allowedOf(
  take: ReturnType<typeof createRateTaker>,
  key: string,
  limit: number,
  count: number,
  windowSeconds = 60,
) {
  const taken = await Promise.all(Array.from({ length: count }, () => take("acct", key, limit, windowSeconds)));
  return taken.filter((t) => t.allowed).length;
}

test("a lease is a hundredth of the limit, at least 1 and at most 1,000", () => {
  expect(leaseOf(5)).toBe(1);
  expect(leaseOf(199)).toBe(1);
  expect(leaseOf(1_000)).toBe(10);
  expect(leaseOf(600_000)).toBe(1_000);
});

for (const backend of brokerBackends()) {
  describe.skipIf(backend.skip !== false)(`rate taker on ${backend.name}`, () => {
    let opened: TestBroker;
    let peer: Broker;
    beforeAll(async () => {
      opened = await backend.open();
      peer = await opened.openPeer();
    });
    afterAll(() => opened?.close());

    test("calls one at a time spend a lease without passing the limit, and the next one is refused with Retry-After", async () => {
      const take = createRateTaker(opened.broker);
      const key = `runs:${randomUUID()}`;
      let allowed = 0;
      for (let i = 0; i < 1_000; i++) if ((await take("acct", key, 1_000, 60)).allowed) allowed++;
      expect(allowed).toBe(1_000);
      const refused = await take("acct", key, 1_000, 60);
      expect(refused).toEqual({ allowed: false, retryAfterSeconds: expect.any(Number) });
      expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect((await opened.broker.take("acct", key, 1_000, 60, 0)).used).toBe(1_000);
    });

    test("two processes share one limit: together never past it, short of it by at most a lease each", async () => {
      const key = `runs:${randomUUID()}`;
      const first = createRateTaker(opened.broker);
      const second = createRateTaker(peer);
      let allowed = 0;
      for (let round = 0; round < 40; round++) {
        const [a, b] = await Promise.all([allowedOf(first, key, 500, 7), allowedOf(second, key, 500, 11)]);
        allowed += a + b;
      }
      expect(allowed).toBeLessThanOrEqual(500);
      expect(allowed).toBeGreaterThanOrEqual(500 - 2 * leaseOf(500));
    });

    test("a lease ends with the window it was granted in", async () => {
      let clock = Date.UTC(2026, 10, 26, 3, 0, 0);
      const take = createRateTaker(opened.broker, () => clock);
      const key = `runs:${randomUUID()}`;
      expect(await allowedOf(take, key, 1_000, 1, 3_600)).toBe(1);
      // The lease's other 9 calls count on the Broker already; the next window's first call takes a new lease.
      clock += 3_600_000;
      expect(await allowedOf(take, key, 1_000, 1, 3_600)).toBe(1);
      expect((await opened.broker.take("acct", key, 1_000, 3_600, 0)).used).toBe(20);
    });
  });
}

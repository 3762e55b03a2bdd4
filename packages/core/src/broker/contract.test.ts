import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DomainError } from "../errors.ts";
import { type Broker, type DeliveredEntry, laneTurnOf, QuotaExceeded } from "./port.ts";
import { brokerBackends, eventually, randomScope, type TestBroker } from "./test-backends.ts";

/**
 * The Broker contract: the same assertions on every adapter. Each test works in a
 * scope of its own, so tests and concurrent runs never see each other's data.
 */
for (const backend of brokerBackends()) {
  describe.skipIf(Boolean(backend.skip))(
    `broker contract on ${backend.name}${backend.skip ? ` (skipped: ${backend.skip})` : ""}`,
    () => {
      let opened: TestBroker;
      let broker: Broker;

      beforeAll(async () => {
        opened = await backend.open();
        broker = opened.broker;
      }, 60_000);
      afterAll(async () => {
        await opened?.close();
      });

      const ids = (entries: { id: string }[]) => entries.map((e) => e.id);
      const payloads = (entries: { payload: string }[]) => entries.map((e) => e.payload);

      async function appendAll(scope: string, stream: string, values: string[]): Promise<string[]> {
        const out: string[] = [];
        for (const value of values) out.push(await broker.append(scope, stream, value));
        return out;
      }

      async function rejection(promise: Promise<unknown>): Promise<DomainError> {
        try {
          await promise;
        } catch (error) {
          if (error instanceof DomainError) return error;
          throw error;
        }
        throw new Error("expected a rejection");
      }

      test("is the adapter it says it is", () => {
        expect(broker.kind).toBe(backend.kind);
      });

      describe("streams", () => {
        test("appends in order and reads ranges page by page", async () => {
          const scope = randomScope();
          const before = Date.now();
          const appended = await appendAll(scope, "events", ["a", "b", "c", "d", "e"]);
          expect(new Set(appended).size).toBe(5);

          const all = await broker.readRange(scope, "events");
          expect(ids(all)).toEqual(appended);
          expect(payloads(all)).toEqual(["a", "b", "c", "d", "e"]);
          for (const entry of all) expect(entry.timestamp).toBeGreaterThanOrEqual(before - 5000);

          const first = await broker.readRange(scope, "events", { limit: 2 });
          const second = await broker.readRange(scope, "events", { after: first.at(-1)?.id, limit: 2 });
          const third = await broker.readRange(scope, "events", { after: second.at(-1)?.id, limit: 2 });
          expect(payloads([...first, ...second, ...third])).toEqual(["a", "b", "c", "d", "e"]);
          expect(await broker.length(scope, "events")).toBe(5);
          expect(await broker.length(scope, "never-written")).toBe(0);
        });

        test("concurrent appends each get the id of their own entry", async () => {
          const scope = randomScope();
          const peer = await opened.openPeer();
          const values = Array.from({ length: 60 }, (_, i) => `v${i}`);
          const appended = await Promise.all(values.map((v, i) => (i % 3 === 0 ? peer : broker).append(scope, "s", v)));
          expect(new Set(appended).size).toBe(values.length);
          const stored = await broker.readRange(scope, "s", { limit: 100 });
          expect(stored).toHaveLength(values.length);
          // Every caller got the id of its own entry.
          const byId = new Map(stored.map((e) => [e.id, e.payload]));
          expect(appended.map((id) => byId.get(id))).toEqual(values);
        });

        test("keeps payloads byte for byte", async () => {
          const scope = randomScope();
          const odd = JSON.stringify({ text: 'zß水🚀\n\t"quoted"', empty: "" });
          await broker.append(scope, "s", odd);
          await broker.append(scope, "s", "");
          expect(payloads(await broker.readRange(scope, "s"))).toEqual([odd, ""]);
        });

        test("a group hands each entry to one member, oldest first, until acked", async () => {
          const scope = randomScope();
          await broker.ensureGroup(scope, "jobs", "workers");
          await appendAll(scope, "jobs", ["1", "2", "3"]);

          const a = await broker.readGroup(scope, "jobs", "workers", "a", { count: 2 });
          const b = await broker.readGroup(scope, "jobs", "workers", "b", { count: 2 });
          expect(payloads(a)).toEqual(["1", "2"]);
          expect(payloads(b)).toEqual(["3"]);
          expect(a.every((e) => e.deliveries === 1)).toBe(true);
          expect(await broker.readGroup(scope, "jobs", "workers", "a")).toEqual([]);
          expect(await broker.pendingCount(scope, "jobs", "workers")).toBe(3);

          expect(await broker.ack(scope, "jobs", "workers", ids(a))).toBe(2);
          expect(await broker.ack(scope, "jobs", "workers", ids(a))).toBe(0);
          expect(await broker.pendingCount(scope, "jobs", "workers")).toBe(1);
        });

        test("every group sees every entry; a group created at the end sees only later ones", async () => {
          const scope = randomScope();
          await broker.append(scope, "s", "old");
          await broker.ensureGroup(scope, "s", "from-start");
          await broker.ensureGroup(scope, "s", "from-end", { startAt: "end" });
          await broker.ensureGroup(scope, "s", "from-start", { startAt: "end" }); // exists: left as it is
          await broker.append(scope, "s", "new");
          expect(payloads(await broker.readGroup(scope, "s", "from-start", "c", { count: 10 }))).toEqual([
            "old",
            "new",
          ]);
          expect(payloads(await broker.readGroup(scope, "s", "from-end", "c", { count: 10 }))).toEqual(["new"]);
        });

        test("reading from a group that does not exist is not_found", async () => {
          const scope = randomScope();
          await broker.append(scope, "s", "x");
          expect((await rejection(broker.readGroup(scope, "s", "nobody", "c"))).code).toBe("not_found");
          expect((await rejection(broker.claimIdle(scope, "s", "nobody", "c", 0, 1))).code).toBe("not_found");
          expect(await broker.pendingCount(scope, "s", "nobody")).toBe(0);
        });

        test("entries of a consumer that died are claimed by another after the idle deadline, with their delivery count", async () => {
          const scope = randomScope();
          await broker.ensureGroup(scope, "s", "g");
          await appendAll(scope, "s", ["1", "2", "3"]);
          const taken = await broker.readGroup(scope, "s", "g", "dies", { count: 3 });
          expect(taken).toHaveLength(3);

          // Fresh entries are not idle yet.
          expect(await broker.claimIdle(scope, "s", "g", "survivor", 60_000, 10)).toEqual([]);
          // Nor are they handed out again as new.
          expect(await broker.readGroup(scope, "s", "g", "survivor", { count: 10 })).toEqual([]);

          // Deadlines wide enough that a loaded machine cannot make a fresh claim look idle.
          await Bun.sleep(1200);
          const claimed = await broker.claimIdle(scope, "s", "g", "survivor", 1000, 10);
          expect(payloads(claimed)).toEqual(["1", "2", "3"]);
          expect(claimed.map((e) => e.deliveries)).toEqual([2, 2, 2]);
          // Claimed entries belong to the survivor now and are not idle.
          expect(await broker.claimIdle(scope, "s", "g", "third", 1000, 10)).toEqual([]);
          expect(await broker.touch(scope, "s", "g", "dies", ids(claimed))).toBe(0);
          expect(await broker.ack(scope, "s", "g", ids(claimed))).toBe(3);
          expect(await broker.pendingCount(scope, "s", "g")).toBe(0);
        });

        test("a group forgets members that hold nothing and have been idle, never one holding entries", async () => {
          const scope = randomScope();
          await broker.ensureGroup(scope, "s", "g");
          const appended = await appendAll(scope, "s", ["1", "2", "3"]);
          // "done" read and acknowledged; "dead" read, gave up, and its entry was claimed by "busy".
          const [done] = await broker.readGroup(scope, "s", "g", "done");
          await broker.ack(scope, "s", "g", ids(done ? [done] : []));
          await broker.readGroup(scope, "s", "g", "busy");
          const dead = await broker.readGroup(scope, "s", "g", "dead");
          await broker.release(scope, "s", "g", "dead", ids(dead));
          expect(await broker.claimIdle(scope, "s", "g", "busy", 60_000, 10)).toHaveLength(1);

          const before = await broker.consumers(scope, "s", "g");
          expect(before.find((c) => c.name === "busy")?.pending).toBe(2);
          // Redis remembers every name that read; the PostgreSQL adapter only those holding entries.
          for (const other of before.filter((c) => c.name !== "busy")) expect(other.pending).toBe(0);
          const idleOnes = before.filter((c) => c.name !== "busy").map((c) => c.name);

          // Nobody has been idle for an hour.
          expect(await broker.removeIdleConsumers(scope, "s", "g", 3_600_000)).toEqual([]);
          expect((await broker.consumers(scope, "s", "g")).map((c) => c.name)).toEqual(before.map((c) => c.name));

          expect(await broker.removeIdleConsumers(scope, "s", "g", 0)).toEqual(idleOnes);
          const after = await broker.consumers(scope, "s", "g");
          expect(after.map((c) => [c.name, c.pending])).toEqual([["busy", 2]]);
          // What "busy" holds is untouched; a forgotten name that reads again joins again.
          expect(await broker.ack(scope, "s", "g", appended.slice(1))).toBe(2);
          await broker.append(scope, "s", "4");
          expect(payloads(await broker.readGroup(scope, "s", "g", "done"))).toEqual(["4"]);
          expect((await broker.consumers(scope, "s", "g")).find((c) => c.name === "done")?.pending).toBe(1);
        });

        test("an unknown stream or group has no members to list or forget", async () => {
          const scope = randomScope();
          expect(await broker.consumers(scope, "nothing", "g")).toEqual([]);
          expect(await broker.removeIdleConsumers(scope, "nothing", "g", 0)).toEqual([]);
          await broker.append(scope, "s", "x");
          expect(await broker.consumers(scope, "s", "nobody")).toEqual([]);
          expect(await broker.removeIdleConsumers(scope, "s", "nobody", 0)).toEqual([]);
          expect((await rejection(broker.removeIdleConsumers(scope, "s", "g", -1))).code).toBe("validation_error");
        });

        test("trimAcknowledged removes only what every group has read and acknowledged", async () => {
          const scope = randomScope();
          expect(await broker.trimAcknowledged(scope, "nothing")).toBe(0);
          await broker.ensureGroup(scope, "s", "g");
          await appendAll(scope, "s", ["1", "2", "3", "4", "5"]);
          const read = await broker.readGroup(scope, "s", "g", "a", { count: 3 });
          await broker.ack(scope, "s", "g", [read[0]?.id as string, read[2]?.id as string]);
          // "2" is pending: it and everything after it stay.
          expect(await broker.trimAcknowledged(scope, "s")).toBe(1);
          expect(payloads(await broker.readRange(scope, "s"))).toEqual(["2", "3", "4", "5"]);
          await broker.ack(scope, "s", "g", [read[1]?.id as string]);
          // "4" and "5" are not read yet.
          expect(await broker.trimAcknowledged(scope, "s")).toBe(2);
          expect(payloads(await broker.readRange(scope, "s"))).toEqual(["4", "5"]);
          // A second group that has read nothing keeps everything that is left.
          await broker.ensureGroup(scope, "s", "late");
          const rest = await broker.readGroup(scope, "s", "g", "a", { count: 2 });
          await broker.ack(scope, "s", "g", ids(rest));
          expect(await broker.trimAcknowledged(scope, "s")).toBe(0);
          expect(payloads(await broker.readGroup(scope, "s", "late", "b", { count: 5 }))).toEqual(["4", "5"]);
          await broker.ack(scope, "s", "late", ids(rest));
          expect(await broker.trimAcknowledged(scope, "s")).toBe(2);
          expect(await broker.length(scope, "s")).toBe(0);
          // Appends go on after a stream was trimmed empty.
          await broker.append(scope, "s", "6");
          expect(payloads(await broker.readGroup(scope, "s", "g", "a"))).toEqual(["6"]);
        });

        test("claim takes at most `count` entries, oldest first", async () => {
          const scope = randomScope();
          await broker.ensureGroup(scope, "s", "g");
          await appendAll(scope, "s", ["1", "2", "3", "4", "5"]);
          const taken = await broker.readGroup(scope, "s", "g", "a", { count: 5 });
          await broker.release(scope, "s", "g", "a", ids(taken));
          expect(payloads(await broker.claimIdle(scope, "s", "g", "b", 60_000, 2))).toEqual(["1", "2"]);
          expect(payloads(await broker.claimIdle(scope, "s", "g", "b", 60_000, 10))).toEqual(["3", "4", "5"]);
        });

        test("release makes entries claimable at once, or after a delay, without counting a delivery", async () => {
          const scope = randomScope();
          await broker.ensureGroup(scope, "s", "g");
          await appendAll(scope, "s", ["now", "later"]);
          const [now, later] = (await broker.readGroup(scope, "s", "g", "a", { count: 2 })) as [
            DeliveredEntry,
            DeliveredEntry,
          ];

          await broker.release(scope, "s", "g", "a", [now.id]);
          await broker.release(scope, "s", "g", "a", [later.id], 0);
          const claimed = await broker.claimIdle(scope, "s", "g", "b", 60_000, 10);
          expect(payloads(claimed)).toEqual(["now"]);
          expect(claimed[0]?.deliveries).toBe(2);

          // Only the holder can release: "a" no longer holds "now".
          await broker.release(scope, "s", "g", "a", [now.id]);
          expect(await broker.claimIdle(scope, "s", "g", "c", 60_000, 10)).toEqual([]);
        });

        test("touch keeps a held entry from being claimed", async () => {
          const scope = randomScope();
          await broker.ensureGroup(scope, "s", "g");
          await broker.append(scope, "s", "long job");
          const [entry] = await broker.readGroup(scope, "s", "g", "a");
          if (!entry) throw new Error("nothing read");
          await broker.release(scope, "s", "g", "a", [entry.id]);
          expect(await broker.touch(scope, "s", "g", "a", [entry.id])).toBe(1);
          expect(await broker.claimIdle(scope, "s", "g", "b", 60_000, 1)).toEqual([]);
        });

        test("concurrent members never hold the same entry at once", async () => {
          const scope = randomScope();
          const peer = await opened.openPeer();
          await broker.ensureGroup(scope, "s", "g");
          const total = 120;
          await Promise.all(Array.from({ length: total }, (_, i) => broker.append(scope, "s", String(i))));

          const members = Array.from({ length: 8 }, (_, i) => ({ name: `m${i}`, via: i % 2 === 0 ? broker : peer }));
          const readAll = async (member: { name: string; via: Broker }) => {
            const got: string[] = [];
            for (;;) {
              const entries = await member.via.readGroup(scope, "s", "g", member.name, { count: 7 });
              if (entries.length === 0) return got;
              got.push(...payloads(entries));
            }
          };
          const read = (await Promise.all(members.map(readAll))).flat();
          expect(read).toHaveLength(total);
          expect(new Set(read).size).toBe(total);

          // Release everything, then let the members race to claim it.
          const pending = await broker.readRange(scope, "s", { limit: total });
          for (const member of members) await broker.release(scope, "s", "g", member.name, ids(pending));
          const claimAll = async (member: { name: string; via: Broker }) => {
            const got: DeliveredEntry[] = [];
            for (;;) {
              const entries = await member.via.claimIdle(scope, "s", "g", member.name, 60_000, 5);
              if (entries.length === 0) return got;
              got.push(...entries);
            }
          };
          const claimed = (await Promise.all(members.map(claimAll))).flat();
          expect(claimed).toHaveLength(total);
          expect(new Set(ids(claimed)).size).toBe(total);
          expect(claimed.every((e) => e.deliveries === 2)).toBe(true);
        });

        test("a blocked reader wakes up for an entry appended while it waits, and gives up after its timeout", async () => {
          const scope = randomScope();
          const peer = await opened.openPeer();
          await broker.ensureGroup(scope, "s", "g");
          const waiting = broker.readGroup(scope, "s", "g", "a", { count: 1, blockMs: 10_000 });
          await Bun.sleep(100);
          await peer.append(scope, "s", "wake up");
          expect(payloads(await waiting)).toEqual(["wake up"]);
          expect(await broker.readGroup(scope, "s", "g", "a", { blockMs: 100 })).toEqual([]);
        });

        test("trim by length keeps the newest entries; claims skip what was trimmed", async () => {
          const scope = randomScope();
          await broker.ensureGroup(scope, "s", "g");
          await appendAll(scope, "s", ["1", "2", "3", "4", "5", "6"]);
          const taken = await broker.readGroup(scope, "s", "g", "a", { count: 6 });
          await broker.release(scope, "s", "g", "a", ids(taken));

          expect(await broker.trim(scope, "s", { maxLength: 2 })).toBe(4);
          expect(payloads(await broker.readRange(scope, "s"))).toEqual(["5", "6"]);
          expect(await broker.length(scope, "s")).toBe(2);
          expect(await broker.trim(scope, "s", { maxLength: 2 })).toBe(0);
          expect(payloads(await broker.claimIdle(scope, "s", "g", "b", 60_000, 10))).toEqual(["5", "6"]);
        });

        test("trimming drops the trimmed entries from every group's pending list", async () => {
          const scope = randomScope();
          await broker.ensureGroup(scope, "s", "one");
          await broker.ensureGroup(scope, "s", "two");
          await appendAll(scope, "s", ["1", "2", "3", "4"]);
          const one = await broker.readGroup(scope, "s", "one", "a", { count: 4 });
          const two = await broker.readGroup(scope, "s", "two", "b", { count: 2 });

          expect(await broker.trim(scope, "s", { maxLength: 1 })).toBe(3);
          expect(await broker.pendingCount(scope, "s", "one")).toBe(1);
          expect(await broker.pendingCount(scope, "s", "two")).toBe(0);
          expect(await broker.touch(scope, "s", "one", "a", ids(one))).toBe(1);
          expect(await broker.ack(scope, "s", "two", ids(two))).toBe(0);
          expect(await broker.ack(scope, "s", "one", ids(one))).toBe(1);

          // Trimming everything empties the pending lists too.
          const rest = await broker.readGroup(scope, "s", "two", "b", { count: 4 });
          expect(payloads(rest)).toEqual(["4"]);
          expect(await broker.trim(scope, "s", { maxLength: 0 })).toBe(1);
          expect(await broker.pendingCount(scope, "s", "two")).toBe(0);
        });

        test("trim by age removes entries older than the limit", async () => {
          const scope = randomScope();
          await appendAll(scope, "s", ["old-1", "old-2"]);
          await Bun.sleep(400);
          await appendAll(scope, "s", ["new"]);
          expect(await broker.trim(scope, "s", { maxAgeMs: 200 })).toBe(2);
          expect(payloads(await broker.readRange(scope, "s"))).toEqual(["new"]);
        });

        test("deleting a stream removes its entries and groups", async () => {
          const scope = randomScope();
          await broker.ensureGroup(scope, "s", "g");
          await broker.append(scope, "s", "x");
          expect(await broker.deleteStream(scope, "s")).toBe(true);
          expect(await broker.deleteStream(scope, "s")).toBe(false);
          expect(await broker.length(scope, "s")).toBe(0);
          expect((await rejection(broker.readGroup(scope, "s", "g", "c"))).code).toBe("not_found");
        });

        test("scopes do not see each other's streams", async () => {
          const [one, two] = [randomScope(), randomScope()];
          await broker.append(one, "shared-name", "one");
          await broker.append(two, "shared-name", "two");
          expect(payloads(await broker.readRange(one, "shared-name"))).toEqual(["one"]);
          expect(payloads(await broker.readRange(two, "shared-name"))).toEqual(["two"]);
        });

        test("names with separators and braces stay apart", async () => {
          const scope = randomScope("a:b{c}");
          await broker.append(scope, "x:y", "1");
          await broker.append(scope, "x", "2");
          expect(payloads(await broker.readRange(scope, "x:y"))).toEqual(["1"]);
          expect(payloads(await broker.readRange(scope, "x"))).toEqual(["2"]);
        });

        test("numbered streams number entries 1, 2, 3 and read by number, page by page", async () => {
          const scope = randomScope();
          const before = Date.now();
          const seqs: number[] = [];
          for (const value of ["a", "b", "c", "d", "e"]) seqs.push(await broker.appendNumbered(scope, "n", value));
          expect(seqs).toEqual([1, 2, 3, 4, 5]);

          const all = await broker.readNumbered(scope, "n");
          expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
          expect(payloads(all)).toEqual(["a", "b", "c", "d", "e"]);
          for (const entry of all) expect(entry.timestamp).toBeGreaterThanOrEqual(before - 5000);
          expect(payloads(await broker.readNumbered(scope, "n", { afterSeq: 2, limit: 2 }))).toEqual(["c", "d"]);
          expect(await broker.readNumbered(scope, "n", { afterSeq: 5 })).toEqual([]);
          expect(await broker.readNumbered(scope, "never-written")).toEqual([]);
          expect(await broker.length(scope, "n")).toBe(5);
        });

        test("concurrent numbered appends get every number once, with no gaps", async () => {
          const scope = randomScope();
          const peer = await opened.openPeer();
          const values = Array.from({ length: 40 }, (_, i) => `v${i}`);
          const seqs = await Promise.all(values.map((v, i) => (i % 2 ? peer : broker).appendNumbered(scope, "n", v)));
          expect([...seqs].sort((a, b) => a - b)).toEqual(values.map((_, i) => i + 1));
          const stored = await broker.readNumbered(scope, "n", { limit: 100 });
          const bySeq = new Map(stored.map((e) => [e.seq, e.payload]));
          expect(seqs.map((seq) => bySeq.get(seq))).toEqual(values);
        });

        test("numbering goes on after trimming; a deleted stream starts again at 1", async () => {
          const scope = randomScope();
          for (const value of ["1", "2", "3", "4"]) await broker.appendNumbered(scope, "n", value);
          expect(await broker.trim(scope, "n", { maxLength: 0 })).toBe(4);
          expect(await broker.appendNumbered(scope, "n", "5")).toBe(5);
          expect((await broker.readNumbered(scope, "n")).map((e) => e.seq)).toEqual([5]);
          expect(await broker.deleteStream(scope, "n")).toBe(true);
          expect(await broker.appendNumbered(scope, "n", "again")).toBe(1);
        });

        test("a numbered append trims in the same call, by length and by age", async () => {
          const scope = randomScope();
          for (const value of ["1", "2", "3", "4"]) {
            await broker.appendNumbered(scope, "n", value, { maxLength: 2 });
          }
          expect(payloads(await broker.readNumbered(scope, "n"))).toEqual(["3", "4"]);

          await broker.appendNumbered(scope, "aged", "old");
          await Bun.sleep(400);
          await broker.appendNumbered(scope, "aged", "new", { maxAgeMs: 200 });
          expect(payloads(await broker.readNumbered(scope, "aged"))).toEqual(["new"]);
          expect((await rejection(broker.appendNumbered(scope, "n", "x", { maxLength: -1 }))).code).toBe(
            "validation_error",
          );
          expect(await broker.length(scope, "n")).toBe(2);
        });

        test("trim by age removes old entries of a numbered stream, or all of them", async () => {
          const scope = randomScope();
          for (let i = 0; i < 40; i++) await broker.appendNumbered(scope, "n", `old-${i}`);
          expect(await broker.trim(scope, "n", { maxLength: 33 })).toBe(7);
          // Ages of seconds, so a loaded machine's slow appends cannot age the new entries.
          await Bun.sleep(2500);
          for (let i = 0; i < 23; i++) await broker.appendNumbered(scope, "n", `new-${i}`);
          expect(await broker.trim(scope, "n", { maxAgeMs: 2000 })).toBe(33);
          const kept = await broker.readNumbered(scope, "n", { limit: 100 });
          expect(kept.map((e) => e.seq)).toEqual(Array.from({ length: 23 }, (_, i) => 41 + i));
          expect(await broker.trim(scope, "n", { maxAgeMs: 2000 })).toBe(0);
          await Bun.sleep(2500);
          expect(await broker.trim(scope, "n", { maxAgeMs: 2000 })).toBe(23);
          expect(await broker.appendNumbered(scope, "n", "next")).toBe(64);
        });

        test("bad arguments are validation errors", async () => {
          const scope = randomScope();
          expect((await rejection(broker.append("", "s", "x"))).code).toBe("validation_error");
          expect((await rejection(broker.readGroup(scope, "s", "g", "c", { count: 0 }))).code).toBe("validation_error");
          expect((await rejection(broker.readRange(scope, "s", { after: "not an id" }))).code).toBe("validation_error");
        });
      });

      describe("lanes", () => {
        /** Reads the stream as a consumer would, admitting each lane's turn as it comes: the order entries reach readers. */
        async function drain(scope: string, stream: string, count: number): Promise<string[]> {
          await broker.ensureGroup(scope, stream, "g");
          const order: string[] = [];
          for (;;) {
            const read = await broker.readGroup(scope, stream, "g", "c", { count: 100 });
            if (read.length === 0) return order;
            for (const entry of read) {
              const turn = laneTurnOf(entry.payload);
              if (turn) await broker.admitLane(scope, stream, turn, count);
              else order.push(entry.payload);
            }
            await broker.ack(scope, stream, "g", ids(read));
          }
        }

        test("a lane's backlog does not hold back another lane's entries", async () => {
          const scope = randomScope();
          for (let i = 0; i < 50; i++) await broker.appendToLane(scope, "q", "flood", `a${i}`);
          await broker.appendToLane(scope, "q", "quiet", "b0");
          // The flood's first entry went straight on; the rest wait in its lane.
          expect(await broker.laneLength(scope, "q", "flood")).toBe(49);

          const order = await drain(scope, "q", 4);
          // Each lane is first in, first out, and the quiet lane's entry comes after at most one turn (4 entries) of the flood.
          expect(order.filter((p) => p.startsWith("a"))).toEqual(Array.from({ length: 50 }, (_, i) => `a${i}`));
          expect(order.indexOf("b0")).toBeLessThanOrEqual(4);
          expect(await broker.laneLength(scope, "q", "flood")).toBe(0);
        });

        test("turns take the lanes with entries in rounds", async () => {
          const scope = randomScope();
          await Promise.all(
            ["x", "y", "z"].map(async (lane) => {
              for (let i = 0; i < 6; i++) await broker.appendToLane(scope, "q", lane, `${lane}${i}`);
            }),
          );
          const order = await drain(scope, "q", 2);
          expect(order).toHaveLength(18);
          // No lane is ever more than one turn (two entries) ahead of another.
          const counts = { x: 0, y: 0, z: 0 };
          for (const payload of order) {
            counts[payload[0] as keyof typeof counts]++;
            expect(Math.max(...Object.values(counts)) - Math.min(...Object.values(counts))).toBeLessThanOrEqual(2);
          }
        });

        test("entries appended to lanes at once keep each lane's order: an idle lane's first goes on with its turn", async () => {
          const scope = randomScope();
          const appended = ["a", "b"].flatMap((lane) =>
            Array.from({ length: 1200 }, (_, i) => broker.appendToLane(scope, "q", lane, `${lane}${i}`)),
          );
          await Promise.all(appended);
          expect(payloads(await broker.readRange(scope, "q")).sort()).toEqual(
            ["a0", "b0", '{"lane":"a","turn":1}', '{"lane":"b","turn":1}'].sort(),
          );
          expect(await broker.laneLength(scope, "q", "a")).toBe(1199);
          expect(await broker.admitLane(scope, "q", { lane: "a", turn: 1 }, 10_000)).toBe(1199);
          const onStream = payloads(await broker.readRange(scope, "q", { limit: 5000 })).filter((payload) =>
            payload.startsWith("a"),
          );
          expect(onStream).toEqual(Array.from({ length: 1200 }, (_, i) => `a${i}`));
        });

        test("an idle lane's entry goes straight on, its turn behind it; a stale or repeated turn moves nothing", async () => {
          const scope = randomScope();
          const turn = (n: number) => `{"lane":"l","turn":${n}}`;
          await broker.appendToLane(scope, "q", "l", "one");
          expect(payloads(await broker.readRange(scope, "q"))).toEqual(["one", turn(1)]);
          await broker.appendToLane(scope, "q", "l", "two");
          await broker.appendToLane(scope, "q", "l", "three");
          expect(await broker.laneLength(scope, "q", "l")).toBe(2);

          expect(await broker.admitLane(scope, "q", { lane: "l", turn: 1 }, 1)).toBe(1);
          expect(await broker.admitLane(scope, "q", { lane: "l", turn: 1 }, 10)).toBe(0);
          expect(await broker.admitLane(scope, "q", { lane: "l", turn: 7 }, 10)).toBe(0);
          expect(await broker.admitLane(scope, "q", { lane: "l", turn: 2 }, 10)).toBe(1);
          expect(await broker.admitLane(scope, "q", { lane: "l", turn: 2 }, 10)).toBe(0);
          // The lane is idle again: its next entry goes straight on, with a first turn.
          await broker.appendToLane(scope, "q", "l", "four");
          expect(payloads(await broker.readRange(scope, "q"))).toEqual([
            "one",
            turn(1),
            "two",
            turn(2),
            "three",
            "four",
            turn(1),
          ]);
          expect(laneTurnOf(turn(2))).toEqual({ lane: "l", turn: 2 });
        });

        test("entries appended while turns are admitted all reach the stream, each once", async () => {
          const scope = randomScope();
          const appended = ["p", "q", "r", "s"].flatMap((lane) => Array.from({ length: 60 }, (_, i) => `${lane}${i}`));
          let producing = true;
          const producers = Promise.all(
            ["p", "q", "r", "s"].map(async (lane) => {
              for (let i = 0; i < 60; i += 3) {
                await Promise.all([i, i + 1, i + 2].map((n) => broker.appendToLane(scope, "q", lane, `${lane}${n}`)));
              }
            }),
          ).finally(() => {
            producing = false;
          });
          const delivered: string[] = [];
          while (producing) {
            delivered.push(...(await drain(scope, "q", 3)));
            // A turn of the event loop for the appends (PGlite answers without one).
            await Bun.sleep(1);
          }
          await producers;
          delivered.push(...(await drain(scope, "q", 3)));
          expect(delivered.toSorted()).toEqual(appended.toSorted());
          for (const lane of ["p", "q", "r", "s"]) expect(await broker.laneLength(scope, "q", lane)).toBe(0);
        });

        test("deleting the stream drops its lanes", async () => {
          const scope = randomScope();
          await broker.appendToLane(scope, "q", "l", "one");
          await broker.appendToLane(scope, "q", "l", "two");
          expect(await broker.deleteStream(scope, "q")).toBe(true);
          expect(await broker.laneLength(scope, "q", "l")).toBe(0);
          await broker.appendToLane(scope, "q", "l", "three");
          expect(await drain(scope, "q", 10)).toEqual(["three"]);
        });
      });

      describe("key-value", () => {
        test("put, get, overwrite and delete, with revisions that only grow", async () => {
          const scope = randomScope();
          const before = Date.now();
          const first = await broker.kvPut(scope, "b", "k", "v1");
          const got = await broker.kvGet(scope, "b", "k");
          expect(got).toMatchObject({ key: "k", value: "v1", revision: first.revision });
          expect(got?.modified.getTime()).toBeGreaterThanOrEqual(before - 5000);

          const second = await broker.kvPut(scope, "b", "k", "v2");
          expect(second.revision).toBeGreaterThan(first.revision);
          expect((await broker.kvGet(scope, "b", "k"))?.value).toBe("v2");

          expect(await broker.kvDelete(scope, "b", "k")).toEqual({ expiring: false });
          expect(await broker.kvDelete(scope, "b", "k")).toBeNull();
          expect(await broker.kvGet(scope, "b", "k")).toBeNull();
          const third = await broker.kvPut(scope, "b", "k", "v3");
          expect(third.revision).toBeGreaterThan(second.revision);
        });

        test("compare-and-set writes only over the expected revision", async () => {
          const scope = randomScope();
          const created = await broker.kvCompareAndSet(scope, "b", "k", "first", 0);
          expect(created.ok).toBe(true);
          expect(created).toMatchObject({ previous: null });
          const again = await broker.kvCompareAndSet(scope, "b", "k", "second", 0);
          expect(again).toEqual({ ok: false, revision: created.revision });

          const updated = await broker.kvCompareAndSet(scope, "b", "k", "second", created.revision, { ttlSeconds: 60 });
          expect(updated).toMatchObject({ ok: true, previous: { expiring: false } });
          expect(updated.revision).toBeGreaterThan(created.revision);
          const stale = await broker.kvCompareAndSet(scope, "b", "k", "third", created.revision);
          expect(stale).toEqual({ ok: false, revision: updated.revision });
          expect((await broker.kvGet(scope, "b", "k"))?.value).toBe("second");
          const overTtl = await broker.kvCompareAndSet(scope, "b", "k", "third", updated.revision);
          expect(overTtl).toMatchObject({ ok: true, previous: { expiring: true } });

          // Deleted and created again: the old revision does not match the new key.
          await broker.kvDelete(scope, "b", "k");
          expect((await broker.kvCompareAndSet(scope, "b", "k", "x", overTtl.revision)).ok).toBe(false);
          const recreated = await broker.kvCompareAndSet(scope, "b", "k", "x", 0);
          expect(recreated.ok).toBe(true);
          expect((await broker.kvCompareAndSet(scope, "b", "k", "y", overTtl.revision)).ok).toBe(false);
        });

        test("concurrent compare-and-set from one revision lets exactly one writer win", async () => {
          const scope = randomScope();
          const { revision } = await broker.kvPut(scope, "b", "k", "start");
          const results = await Promise.all(
            Array.from({ length: 20 }, (_, i) => broker.kvCompareAndSet(scope, "b", "k", `writer-${i}`, revision)),
          );
          const winners = results.filter((r) => r.ok);
          expect(winners).toHaveLength(1);
          const final = await broker.kvGet(scope, "b", "k");
          expect(final?.revision).toBe(winners[0]?.revision);
        });

        test("keys are listed in byte order, page by page", async () => {
          const scope = randomScope();
          const keys = ["b", "a", "B", "a:1", "ä", "c", "a0"];
          for (const key of keys) await broker.kvPut(scope, "bucket", key, "v");
          const sorted = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));

          const listed: string[] = [];
          let cursor: string | undefined;
          for (let pages = 0; pages < 10; pages++) {
            const page = await broker.kvKeys(scope, "bucket", { cursor, limit: 3 });
            listed.push(...page.keys);
            if (!page.next) break;
            cursor = page.next;
          }
          expect(listed).toEqual(sorted);
          expect((await broker.kvKeys(scope, "bucket", { limit: 7 })).next).toBeNull();
          expect(await broker.kvKeys(scope, "empty-bucket")).toEqual({ keys: [], next: null });
        });

        test("a put tells what it replaced: nothing, a value without expiry, or one with a TTL", async () => {
          const scope = randomScope();
          expect((await broker.kvPut(scope, "b", "k", "1")).previous).toBeNull();
          expect((await broker.kvPut(scope, "b", "k", "2", { ttlSeconds: 60 })).previous).toEqual({ expiring: false });
          expect((await broker.kvPut(scope, "b", "k", "3", { ttlSeconds: 0.05 })).previous).toEqual({ expiring: true });
          await Bun.sleep(150);
          // Expired: nothing live was replaced.
          expect((await broker.kvPut(scope, "b", "k", "4")).previous).toBeNull();
          await broker.kvPut(scope, "b", "t", "1", { ttlSeconds: 60 });
          expect(await broker.kvDelete(scope, "b", "t")).toEqual({ expiring: true });
        });

        test("concurrent puts of a new key: exactly one of them created it", async () => {
          const scope = randomScope();
          const peer = await opened.openPeer();
          const results = await Promise.all(
            Array.from({ length: 20 }, (_, i) => (i % 2 ? peer : broker).kvPut(scope, "b", "k", `v${i}`)),
          );
          expect(results.filter((r) => r.previous === null)).toHaveLength(1);
          expect(new Set(results.map((r) => r.revision)).size).toBe(20);
        });

        test("listing by prefix pages through the keys that start with it, and no others", async () => {
          const scope = randomScope();
          const keys = ["user/1", "user/2", "user/10", "user", "users", "user/ä", "usa", "v", "a/user/1"];
          for (const key of keys) await broker.kvPut(scope, "b", key, "v");
          const listed: string[] = [];
          let cursor: string | undefined;
          for (let pages = 0; pages < 10; pages++) {
            const page = await broker.kvKeys(scope, "b", { prefix: "user/", cursor, limit: 2 });
            listed.push(...page.keys);
            if (!page.next) break;
            cursor = page.next;
          }
          expect(listed).toEqual(["user/1", "user/10", "user/2", "user/ä"]);
          expect((await broker.kvKeys(scope, "b", { prefix: "user" })).keys).toEqual([
            "user",
            "user/1",
            "user/10",
            "user/2",
            "user/ä",
            "users",
          ]);
          // A cursor before the prefix starts at the prefix; one past it finds nothing.
          expect((await broker.kvKeys(scope, "b", { prefix: "user/", cursor: "a" })).keys).toHaveLength(4);
          expect(await broker.kvKeys(scope, "b", { prefix: "user/", cursor: "v" })).toEqual({ keys: [], next: null });
          expect((await broker.kvKeys(scope, "b", { prefix: "nobody" })).keys).toEqual([]);
        });

        test("keys expire after their TTL and then count as absent", async () => {
          const scope = randomScope();
          await broker.kvPut(scope, "b", "short", "v", { ttlSeconds: 0.3 });
          await broker.kvPut(scope, "b", "forever", "v");
          await broker.kvPut(scope, "b", "made-permanent", "v", { ttlSeconds: 0.3 });
          await broker.kvPut(scope, "b", "made-permanent", "v2");
          expect((await broker.kvGet(scope, "b", "short"))?.value).toBe("v");

          await Bun.sleep(600);
          expect(await broker.kvGet(scope, "b", "short")).toBeNull();
          expect((await broker.kvKeys(scope, "b")).keys).toEqual(["forever", "made-permanent"]);
          expect(await broker.kvDelete(scope, "b", "short")).toBeNull();
          expect((await broker.kvCompareAndSet(scope, "b", "short", "again", 0)).ok).toBe(true);
          expect((await broker.kvGet(scope, "b", "short"))?.value).toBe("again");
        });

        test("deleting a bucket removes its keys and leaves other buckets alone", async () => {
          const scope = randomScope();
          await broker.kvPut(scope, "doomed", "a", "1");
          await broker.kvPut(scope, "doomed", "b", "2");
          await broker.kvPut(scope, "kept", "a", "1");
          await broker.kvPut(scope, "doomed", "c", "3", { ttlSeconds: 60 });
          await broker.kvPut(scope, "doomed", "gone", "4", { ttlSeconds: 0.05 });
          await Bun.sleep(150);
          expect(await broker.kvDeleteBucket(scope, "doomed")).toEqual({ keys: 3, expiring: 1 });
          expect(await broker.kvGet(scope, "doomed", "a")).toBeNull();
          expect((await broker.kvKeys(scope, "kept")).keys).toEqual(["a"]);
        });

        test("scopes and buckets do not see each other's keys", async () => {
          const [one, two] = [randomScope(), randomScope()];
          await broker.kvPut(one, "b", "k", "one");
          await broker.kvPut(two, "b", "k", "two");
          await broker.kvPut(one, "other", "k", "other");
          expect((await broker.kvGet(one, "b", "k"))?.value).toBe("one");
          expect((await broker.kvGet(two, "b", "k"))?.value).toBe("two");
          expect((await broker.kvGet(one, "other", "k"))?.value).toBe("other");
        });
      });

      describe("counters and rate limits", () => {
        test("counters add up and start at zero", async () => {
          const scope = randomScope();
          expect(await broker.counter(scope, "runs")).toBe(0);
          expect(await broker.increment(scope, "runs")).toBe(1);
          expect(await broker.increment(scope, "runs", 5)).toBe(6);
          await Promise.all(Array.from({ length: 20 }, () => broker.increment(scope, "runs")));
          expect(await broker.counter(scope, "runs")).toBe(26);
          expect(await broker.counter(randomScope(), "runs")).toBe(0);
        });

        test("increments made at once each answer the value they left, as if made one after another", async () => {
          const scope = randomScope();
          const values = await Promise.all(
            Array.from({ length: 30 }, (_, i) => broker.increment(scope, i % 3 === 0 ? "failed" : "runs", 2)),
          );
          const runs = values.filter((_, i) => i % 3 !== 0);
          const failed = values.filter((_, i) => i % 3 === 0);
          expect([...runs].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => 2 * (i + 1)));
          expect([...failed].sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => 2 * (i + 1)));
          expect(await broker.counter(scope, "runs")).toBe(40);
          expect(await broker.counter(scope, "failed")).toBe(20);
        });

        test("the limiter allows exactly `limit` of 50 concurrent callers", async () => {
          const scope = randomScope();
          const peer = await opened.openPeer();
          const decisions = await Promise.all(
            Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? broker : peer).allow(scope, "login", 10, 60)),
          );
          const allowed = decisions.filter((d) => d.allowed);
          const denied = decisions.filter((d) => !d.allowed);
          expect(allowed).toHaveLength(10);
          expect(allowed.every((d) => d.retryAfterSeconds === 0)).toBe(true);
          expect(denied.every((d) => d.retryAfterSeconds >= 1 && d.retryAfterSeconds <= 60)).toBe(true);
          // Other keys and scopes have windows of their own.
          expect((await broker.allow(scope, "other", 10, 60)).allowed).toBe(true);
          expect((await broker.allow(randomScope(), "login", 10, 60)).allowed).toBe(true);
        });

        test("calls of one process at once take the window's free slots, and the others wait its length", async () => {
          const scope = randomScope();
          const decisions = await Promise.all(Array.from({ length: 5 }, () => broker.allow(scope, "burst", 3, 60)));
          expect(decisions.filter((d) => d.allowed)).toHaveLength(3);
          expect(decisions.filter((d) => !d.allowed).map((d) => d.retryAfterSeconds)).toEqual([60, 60]);
          // A call under a higher limit for the same key counts the same window's calls.
          expect((await broker.allow(scope, "burst", 4, 60)).allowed).toBe(true);
          expect((await broker.allow(scope, "burst", 4, 60)).allowed).toBe(false);
        });

        test("the window slides: a slot frees up once its call is older than the window", async () => {
          const scope = randomScope();
          expect((await broker.allow(scope, "k", 2, 0.4)).allowed).toBe(true);
          expect((await broker.allow(scope, "k", 2, 0.4)).allowed).toBe(true);
          expect(await broker.allow(scope, "k", 2, 0.4)).toEqual({ allowed: false, retryAfterSeconds: 1 });
          await Bun.sleep(600);
          expect((await broker.allow(scope, "k", 2, 0.4)).allowed).toBe(true);
        });

        test("Retry-After counts until enough calls leave a window holding more than the limit", async () => {
          // Calls allowed under a higher limit stay in the window when the limit is lowered.
          const scope = randomScope();
          expect((await broker.allow(scope, "k", 2, 3)).allowed).toBe(true);
          await Bun.sleep(1100);
          expect((await broker.allow(scope, "k", 2, 3)).allowed).toBe(true);
          // With a limit of 1 a slot frees up when the newer call leaves, about 3 s from now.
          expect(await broker.allow(scope, "k", 1, 3)).toEqual({ allowed: false, retryAfterSeconds: 3 });
        });
      });

      describe("what a scope keeps, and quotas on it", () => {
        const quotaError = async (promise: Promise<unknown>) => {
          try {
            await promise;
          } catch (error) {
            if (error instanceof QuotaExceeded) return { quota: error.quota, used: error.used, limit: error.limit };
            throw error;
          }
          throw new Error("expected a quota refusal");
        };

        test("KV bytes count each key's name and value, as written, replaced, deleted and expired", async () => {
          const scope = randomScope();
          expect(await broker.usage(scope)).toEqual({ kvBytes: 0, streamBytes: 0 });
          await broker.kvPut(scope, "b", "k1", "0123456789");
          await broker.kvPut(scope, "b", "k2", "abc", { ttlSeconds: 0.2 });
          expect((await broker.usage(scope)).kvBytes).toBe(2 + 10 + 2 + 3);
          await broker.kvPut(scope, "b", "k1", "01234");
          expect((await broker.usage(scope)).kvBytes).toBe(2 + 5 + 2 + 3);
          await broker.kvDelete(scope, "b", "k1");
          expect((await broker.usage(scope)).kvBytes).toBe(2 + 3);
          // An expired key counts until it is removed: at the latest by a write under quota.
          await Bun.sleep(300);
          await broker.kvPut(scope, "b", "k3", "x", { maxBytes: 1000 });
          expect((await broker.usage(scope)).kvBytes).toBe(2 + 1);
          await broker.kvPut(scope, "other", "k4", "yy");
          expect((await broker.usage(scope)).kvBytes).toBe(3 + 4);
          await broker.kvDeleteBucket(scope, "b");
          expect((await broker.usage(scope)).kvBytes).toBe(4);
        });

        test("a KV write past maxBytes writes nothing; one within it, or one that shrinks a value, is written", async () => {
          const scope = randomScope();
          await broker.kvPut(scope, "b", "k", "12345678", { maxBytes: 10 });
          expect(await quotaError(broker.kvPut(scope, "b", "j", "1", { maxBytes: 10 }))).toEqual({
            quota: "bytes",
            used: 9,
            limit: 10,
          });
          expect(await broker.kvGet(scope, "b", "j")).toBeNull();
          await broker.kvPut(scope, "b", "k", "1234", { maxBytes: 10 });
          const written = await broker.kvCompareAndSet(scope, "b", "j", "1", 0, { maxBytes: 10 });
          expect(written.ok).toBe(true);
          expect((await broker.usage(scope)).kvBytes).toBe(5 + 2);
        });

        test("stream bytes count numbered entries' payloads, as appended, trimmed and deleted", async () => {
          const scope = randomScope();
          await broker.appendNumbered(scope, "s", "0123456789");
          await broker.appendNumbered(scope, "s", "abc", { maxLength: 5 });
          expect((await broker.usage(scope)).streamBytes).toBe(13);
          await broker.appendNumbered(scope, "s", "xy", { maxLength: 2 });
          expect((await broker.usage(scope)).streamBytes).toBe(3 + 2);
          await broker.trim(scope, "s", { maxLength: 1 });
          expect((await broker.usage(scope)).streamBytes).toBe(2);
          await broker.appendNumbered(scope, "t", "12345");
          await Bun.sleep(5); // Older than now by the backend's clock, in whole milliseconds on Redis.
          await broker.trim(scope, "t", { maxAgeMs: 0 });
          expect((await broker.usage(scope)).streamBytes).toBe(2);
          await broker.deleteStream(scope, "s");
          expect((await broker.usage(scope)).streamBytes).toBe(0);
        });

        test("an append past maxEntries or maxBytes writes nothing", async () => {
          const scope = randomScope();
          await broker.appendNumbered(scope, "s", "1234", {}, { maxEntries: 2, maxBytes: 10 });
          await broker.appendNumbered(scope, "s", "5678", {}, { maxEntries: 2, maxBytes: 10 });
          expect(await quotaError(broker.appendNumbered(scope, "s", "9", {}, { maxEntries: 2 }))).toEqual({
            quota: "entries",
            used: 2,
            limit: 2,
          });
          expect(await quotaError(broker.appendNumbered(scope, "t", "123", {}, { maxBytes: 10 }))).toEqual({
            quota: "bytes",
            used: 8,
            limit: 10,
          });
          expect((await broker.readNumbered(scope, "s")).map((entry) => entry.payload)).toEqual(["1234", "5678"]);
          expect(await broker.length(scope, "t")).toBe(0);
          expect((await broker.usage(scope)).streamBytes).toBe(8);
        });
      });

      describe("windowed counts", () => {
        test("grant up to the limit in a window, the rest with a wait; reading takes nothing", async () => {
          const scope = randomScope();
          expect(await broker.take(scope, "k", 5, 60, 3)).toEqual({ granted: 3, used: 3, retryAfterSeconds: 0 });
          expect(await broker.take(scope, "k", 5, 60, 4)).toMatchObject({ granted: 2, used: 5 });
          const refused = await broker.take(scope, "k", 5, 60, 1);
          expect(refused.granted).toBe(0);
          expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
          expect(refused.retryAfterSeconds).toBeLessThanOrEqual(120);
          expect(await broker.take(scope, "k", 5, 60, 0)).toEqual({ granted: 0, used: 5, retryAfterSeconds: 0 });
          expect((await broker.take(scope, "other", 5, 60, 1)).granted).toBe(1);
        });

        test("a window that has passed no longer counts", async () => {
          const scope = randomScope();
          expect((await broker.take(scope, "k", 2, 0.2, 2)).granted).toBe(2);
          await Bun.sleep(450);
          expect((await broker.take(scope, "k", 2, 0.2, 2)).granted).toBe(2);
        });
      });

      describe("notifications", () => {
        test("subscribers of a channel hear what is published on it, until they unsubscribe", async () => {
          const scope = randomScope();
          const peer = await opened.openPeer();
          const heard: string[] = [];
          const heardByPeer: string[] = [];
          const other: string[] = [];
          const stop = await broker.subscribe(scope, "run:1", (m) => heard.push(m));
          const stopPeer = await peer.subscribe(scope, "run:1", (m) => heardByPeer.push(m));
          const stopOther = await broker.subscribe(scope, "run:2", (m) => other.push(m));
          const stopOtherScope = await broker.subscribe(randomScope(), "run:1", (m) => other.push(m));

          await peer.publish(scope, "run:1", "finished");
          await eventually(() => heard.length === 1 && heardByPeer.length === 1);
          expect(heard).toEqual(["finished"]);
          expect(heardByPeer).toEqual(["finished"]);

          await stop();
          await broker.publish(scope, "run:1", "again");
          await eventually(() => heardByPeer.length === 2);
          await Bun.sleep(100);
          expect(heard).toEqual(["finished"]);
          expect(other).toEqual([]);
          await Promise.all([stopPeer(), stopOther(), stopOtherScope()]);
        });

        test("a subscriber that throws does not keep the message from the others", async () => {
          const scope = randomScope();
          const heard: string[] = [];
          const stopFaulty = await broker.subscribe(scope, "run:1", () => {
            throw new Error("a broken subscriber");
          });
          const stop = await broker.subscribe(scope, "run:1", (m) => heard.push(m));
          await broker.publish(scope, "run:1", "finished");
          await eventually(() => heard.length === 1);
          expect(heard).toEqual(["finished"]);
          await Promise.all([stopFaulty(), stop()]);
        });

        test("closing a broker tells its subscribers nothing", async () => {
          const scope = randomScope();
          const peer = await opened.openPeer();
          const heard: string[] = [];
          await peer.subscribe(scope, "run:1", (m) => heard.push(m));
          await peer.close();
          await broker.publish(scope, "run:1", "after close");
          await Bun.sleep(100);
          expect(heard).toEqual([]);
        });

        test("a message over the size limit is refused", async () => {
          expect((await rejection(broker.publish(randomScope(), "c", "x".repeat(7001)))).code).toBe("validation_error");
        });
      });

      test("ping answers while the backend is up", async () => {
        await broker.ping();
      });
    },
  );
}

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { platformJobs } from "@platform/core";
import { eventually } from "@platform/core/testing";
import { type Caller, call, newCaller, storageError } from "./context.ts";
import { adapterVariants, startPeerApi, startTestApi, type TestApi } from "./harness.ts";

for (const { label: name, backend, redis, skip } of adapterVariants()) {
  describe.skipIf(Boolean(skip))(`storage streams on ${name}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis });
      owner = await newCaller(api, "streams");
    }, 60_000);
    afterAll(() => api.stop());

    const put = (stream: string, settings: Record<string, unknown> = {}, as: Caller | null = owner) =>
      call(api, as, "PUT", `/storage/streams/${stream}`, settings);
    const publish = (stream: string, subject: string, body: unknown = {}, as: Caller | null = owner, via = api) =>
      call(via, as, "POST", `/storage/streams/${stream}/messages`, { stream, subject, body });
    const read = (stream: string, query = "", as: Caller | null = owner, via = api) =>
      call(via, as, "GET", `/storage/streams/${stream}/messages${query}`);
    const remove = (stream: string, as: Caller | null = owner) => call(api, as, "DELETE", `/storage/streams/${stream}`);

    async function publishAll(stream: string, subjects: string[]): Promise<void> {
      for (const [i, subject] of subjects.entries()) {
        expect(await publish(stream, subject, { i })).toMatchObject({ status: 200, body: { message: "success" } });
      }
    }

    /** Every page of a read, following `next`. */
    async function readAll(stream: string, query: string): Promise<{ seqs: number[]; pages: number }> {
      const seqs: number[] = [];
      let after: number | null = 0;
      let pages = 0;
      while (after !== null && pages < 50) {
        const page = await read(stream, `?after=${after}&${query}`);
        expect(page.status).toBe(200);
        seqs.push(...page.body.data.map((m: { seq: number }) => m.seq));
        after = page.body.next;
        pages += 1;
      }
      return { seqs, pages };
    }

    test("a stream is created, published to and read back in order, numbered from 1", async () => {
      const before = Date.now();
      expect(await put("orders", { description: "order events" })).toEqual({
        status: 200,
        body: { message: "success" },
        headers: expect.anything(),
      });
      const bodies = [{ id: 1, total: 9.5 }, { nested: { list: [1, "two", null] } }, {}];
      for (const body of bodies) {
        expect((await publish("orders", "orders.created", body)).body).toEqual({ message: "success" });
      }
      const page = await read("orders");
      expect(page.status).toBe(200);
      expect(page.body.next).toBeNull();
      expect(page.body.data.map((m: { seq: number }) => m.seq)).toEqual([1, 2, 3]);
      expect(page.body.data.map((m: { body: unknown }) => m.body)).toEqual(bodies);
      for (const message of page.body.data) {
        expect(Object.keys(message).sort()).toEqual(["body", "seq", "subject", "ts"]);
        expect(message.subject).toBe("orders.created");
        // Milliseconds, taken when the broker stored it (its clock may differ slightly from ours).
        expect(message.ts).toBeGreaterThan(before - 5000);
        expect(message.ts).toBeLessThan(Date.now() + 5000);
      }
    });

    test("pages follow next until it is null, and after takes any seq", async () => {
      await put("paged");
      await publishAll(
        "paged",
        Array.from({ length: 7 }, () => "tick"),
      );
      const first = await read("paged", "?limit=3");
      expect(first.body.data.map((m: { seq: number }) => m.seq)).toEqual([1, 2, 3]);
      expect(first.body.next).toBe(3);
      const second = await read("paged", "?limit=3&after=3");
      expect(second.body.data.map((m: { seq: number }) => m.seq)).toEqual([4, 5, 6]);
      const last = await read("paged", "?limit=3&after=6");
      expect(last.body).toEqual({ data: [expect.objectContaining({ seq: 7 })], next: null });
      // A page that ends exactly at the last message says so.
      expect((await read("paged", "?limit=7")).body.next).toBeNull();
      expect((await read("paged", "?after=7")).body).toEqual({ data: [], next: null });
      expect((await read("paged", "?after=1000")).body).toEqual({ data: [], next: null });
      expect(await readAll("paged", "limit=2")).toEqual({ seqs: [1, 2, 3, 4, 5, 6, 7], pages: 4 });
    });

    test("subject filters: * is one token, > is the rest, exact subjects match exactly", async () => {
      await put("events");
      await publishAll("events", [
        "orders.eu.created",
        "orders.us.created",
        "orders.eu.deleted",
        "orders.eu.created.late",
        "payments.eu.created",
        "orders",
      ]);
      const seqsFor = async (filter: string) => {
        const page = await read("events", `?subject=${encodeURIComponent(filter)}`);
        expect(page.status).toBe(200);
        return page.body.data.map((m: { seq: number }) => m.seq);
      };
      expect(await seqsFor("orders.*.created")).toEqual([1, 2]);
      expect(await seqsFor("orders.>")).toEqual([1, 2, 3, 4]);
      expect(await seqsFor("*.eu.*")).toEqual([1, 3, 5]);
      expect(await seqsFor("*.eu.>")).toEqual([1, 3, 4, 5]);
      expect(await seqsFor(">")).toEqual([1, 2, 3, 4, 5, 6]);
      expect(await seqsFor("*")).toEqual([6]);
      expect(await seqsFor("orders")).toEqual([6]);
      expect(await seqsFor("orders.eu.created")).toEqual([1]);
      expect(await seqsFor("refunds.>")).toEqual([]);
      const filtered = await read("events", "?subject=orders.*.created&limit=1");
      expect(filtered.body).toMatchObject({
        data: [{ seq: 1, subject: "orders.eu.created", body: { i: 0 } }],
        next: 1,
      });
    });

    test("a rarely matching filter looks at 2,000 messages per read and hands back next to go on", async () => {
      await put("haystack");
      await publish("haystack", "needle.first");
      const hay = Array.from({ length: 2100 }, (_, i) => i);
      for (let i = 0; i < hay.length; i += 50) {
        const batch = hay.slice(i, i + 50).map(() => publish("haystack", "hay"));
        for (const answer of await Promise.all(batch)) expect(answer.status).toBe(200);
      }
      await publish("haystack", "needle.last");

      const first = await read("haystack", "?subject=needle.*&limit=10");
      expect(first.body.data.map((m: { subject: string }) => m.subject)).toEqual(["needle.first"]);
      expect(first.body.next).toBe(2000);
      const second = await read("haystack", `?subject=needle.*&limit=10&after=${first.body.next}`);
      expect(second.body).toEqual({
        data: [expect.objectContaining({ seq: 2102, subject: "needle.last" })],
        next: null,
      });
      // Unfiltered, the limit bounds the page as usual.
      expect((await read("haystack", "?limit=1000")).body.next).toBe(1000);
    }, 60_000);

    test("retention by count keeps the newest messages; numbering goes on", async () => {
      await put("capped", { max_messages: 3 });
      await publishAll("capped", ["a", "b", "c", "d", "e"]);
      const page = await read("capped");
      expect(page.body.data.map((m: { seq: number; subject: string }) => [m.seq, m.subject])).toEqual([
        [3, "c"],
        [4, "d"],
        [5, "e"],
      ]);
      // Lowering the limit applies at once; lifting it keeps what is left.
      await put("capped", { max_messages: 1 });
      expect((await read("capped")).body.data.map((m: { seq: number }) => m.seq)).toEqual([5]);
      await put("capped", {});
      await publishAll("capped", ["f", "g"]);
      expect((await read("capped")).body.data.map((m: { seq: number }) => m.seq)).toEqual([5, 6, 7]);
    });

    test("retention by age: expired messages are never read, and publishing or the periodic job removes them", async () => {
      await put("short-lived", { max_age_s: 1 });
      await put("idle", { max_age_s: 1 });
      await publishAll("short-lived", ["old.1", "old.2"]);
      await publishAll("idle", ["old"]);
      const stored = await Promise.all(["short-lived", "idle"].map((stream) => streamIdOf(api, owner, stream)));
      await Bun.sleep(1100);

      // Not yet trimmed, already invisible.
      expect((await read("idle")).body).toEqual({ data: [], next: null });
      expect(await api.services.broker.length(owner.accountId, stored[1] as string)).toBe(1);

      await publish("short-lived", "new");
      expect(
        (await read("short-lived")).body.data.map((m: { seq: number; subject: string }) => [m.seq, m.subject]),
      ).toEqual([[3, "new"]]);
      expect(await api.services.broker.length(owner.accountId, stored[0] as string)).toBe(1);

      const retention = platformJobs(api.services).find((job) => job.name === "storage-stream-retention");
      await retention?.run({ signal: new AbortController().signal, logger: api.services.logger });
      expect(await api.services.broker.length(owner.accountId, stored[1] as string)).toBe(0);
    });

    test("a deleted stream is gone; made again, it starts empty at seq 1", async () => {
      await put("doomed");
      await publishAll("doomed", ["a", "b"]);
      expect((await remove("doomed")).body).toEqual({ message: "success" });
      expect(await read("doomed")).toMatchObject(storageError(404, "not_found"));
      expect(await publish("doomed", "a")).toMatchObject(storageError(404, "not_found"));
      expect(await remove("doomed")).toMatchObject(storageError(404, "not_found"));
      await put("doomed");
      expect((await read("doomed")).body).toEqual({ data: [], next: null });
      await publish("doomed", "again");
      expect((await read("doomed")).body.data.map((m: { seq: number }) => m.seq)).toEqual([1]);
    });

    test("publishing counts stream.messages and stream.bytes (the body's JSON) per stream", async () => {
      const counter = await newCaller(api, "stream-metrics");
      await put("metered", {}, counter);
      await put("other", {}, counter);
      const bodies = [{ a: 1 }, { text: "héllo" }];
      for (const body of bodies) await publish("metered", "m", body, counter);
      await publish("other", "m", {}, counter);
      const read_ = (metric: "stream.messages" | "stream.bytes", stream: string) =>
        api.services.metrics.read(counter.accountId, metric, stream);
      expect(await read_("stream.messages", "metered")).toBe(2);
      expect(await read_("stream.bytes", "metered")).toBe(
        bodies.reduce((sum, body) => sum + Buffer.byteLength(JSON.stringify(body)), 0),
      );
      expect(await read_("stream.messages", "other")).toBe(1);
      expect(await read_("stream.bytes", "other")).toBe(2);

      // The monitoring endpoint reads the same counters.
      const metrics = await call(api, counter, "POST", "/monitoring/metrics/current", {
        metrics: ["stream.messages", "stream.bytes"],
        stream: "metered",
      });
      expect(metrics.body.data.map((entry: { value: number }) => entry.value)).toEqual([
        2,
        await read_("stream.bytes", "metered"),
      ]);
    });

    test("another API process sees a stream deleted and made again, and publishes to the new one", async () => {
      const peer = await startPeerApi(api);
      try {
        await put("shared");
        await publish("shared", "before");
        // The peer reads the stream, and keeps its definition.
        for (let i = 0; i < 2; i++) {
          expect((await read("shared", "", owner, peer)).body.data).toHaveLength(1);
        }
        await remove("shared");
        await eventually(async () => (await read("shared", "", owner, peer)).status === 404);
        await put("shared");
        await eventually(async () => (await read("shared", "", owner, peer)).status === 200);
        expect((await publish("shared", "after", {}, owner, peer)).status).toBe(200);
        expect(
          (await read("shared")).body.data.map((m: { seq: number; subject: string }) => [m.seq, m.subject]),
        ).toEqual([[1, "after"]]);
      } finally {
        await peer.stop();
      }
    });

    test("accounts do not see each other's streams; names are unique per account only", async () => {
      const other = await newCaller(api, "stream-intruder");
      await put("private");
      await publish("private", "secret.thing", { card: "4242" });
      expect(await read("private", "", other)).toMatchObject(storageError(404, "not_found"));
      expect(await publish("private", "x", {}, other)).toMatchObject(storageError(404, "not_found"));
      expect(await remove("private", other)).toMatchObject(storageError(404, "not_found"));

      // The other account's stream of the same name is its own.
      await put("private", {}, other);
      await publish("private", "mine", {}, other);
      expect((await read("private", "", other)).body.data.map((m: { subject: string }) => m.subject)).toEqual(["mine"]);
      expect((await read("private")).body.data.map((m: { subject: string }) => m.subject)).toEqual(["secret.thing"]);
      await remove("private", other);
      expect((await read("private")).body.data).toHaveLength(1);
    });

    test("every operation without a credential is 401 unauthorized", async () => {
      await put("guarded");
      for (const answer of [
        await put("guarded", {}, null),
        await publish("guarded", "x", {}, null),
        await read("guarded", "", null),
        await remove("guarded", null),
        await call(
          api,
          { headers: { authorization: "Bearer not-a-token" } },
          "GET",
          "/storage/streams/guarded/messages",
        ),
      ]) {
        expect(answer).toMatchObject(storageError(401, "unauthorized"));
      }
    });

    test("bad input is 400 validation_error, an oversized body 413 payload_too_large", async () => {
      await put("strict");
      const huge = "x".repeat(100_000);
      // A URL over 16 KiB is refused by the HTTP server itself (431); 8,000 characters reach the schema.
      const long = "x".repeat(8000);
      const cases: [string, string, string, unknown][] = [
        ["PUT", `/storage/streams/${long}`, "an 8,000-character name", {}],
        ["PUT", `/storage/streams/${"x".repeat(65)}`, "a 65-character name", {}],
        ["PUT", "/storage/streams/.hidden", "a name starting with a dot", {}],
        ["PUT", "/storage/streams/a%20b", "a space", {}],
        ["PUT", "/storage/streams/%C3%A4", "a non-ASCII name", {}],
        ["PUT", "/storage/streams/strict", "max_messages as a string", { max_messages: "3" }],
        ["PUT", "/storage/streams/strict", "max_messages as a boolean", { max_messages: true }],
        ["PUT", "/storage/streams/strict", "a fractional max_messages", { max_messages: 1.5 }],
        ["PUT", "/storage/streams/strict", "max_messages of 0", { max_messages: 0 }],
        ["PUT", "/storage/streams/strict", "a negative max_age_s", { max_age_s: -1 }],
        ["PUT", "/storage/streams/strict", "max_age_s as an array", { max_age_s: [] }],
        ["PUT", "/storage/streams/strict", "a description that is not text", { description: 5 }],
        ["PUT", "/storage/streams/strict", "a 1,025-character description", { description: "d".repeat(1025) }],
        [
          "POST",
          "/storage/streams/strict/messages",
          "another stream in the body",
          { stream: "other", subject: "a", body: {} },
        ],
        ["POST", "/storage/streams/strict/messages", "no stream in the body", { subject: "a", body: {} }],
        [
          "POST",
          "/storage/streams/strict/messages",
          "a wildcard subject",
          { stream: "strict", subject: "a.*", body: {} },
        ],
        [
          "POST",
          "/storage/streams/strict/messages",
          "a subject ending in >",
          { stream: "strict", subject: "a.>", body: {} },
        ],
        ["POST", "/storage/streams/strict/messages", "an empty token", { stream: "strict", subject: "a..b", body: {} }],
        ["POST", "/storage/streams/strict/messages", "an empty subject", { stream: "strict", subject: "", body: {} }],
        [
          "POST",
          "/storage/streams/strict/messages",
          "a subject with a space",
          { stream: "strict", subject: "a b", body: {} },
        ],
        ["POST", "/storage/streams/strict/messages", "a 100 KB subject", { stream: "strict", subject: huge, body: {} }],
        ["POST", "/storage/streams/strict/messages", "a numeric subject", { stream: "strict", subject: 5, body: {} }],
        ["POST", "/storage/streams/strict/messages", "an array body", { stream: "strict", subject: "a", body: [1] }],
        ["POST", "/storage/streams/strict/messages", "a text body", { stream: "strict", subject: "a", body: "x" }],
        ["POST", "/storage/streams/strict/messages", "no body", { stream: "strict", subject: "a" }],
        ["GET", "/storage/streams/strict/messages?after=-1", "a negative after", undefined],
        ["GET", "/storage/streams/strict/messages?after=abc", "after that is no number", undefined],
        ["GET", "/storage/streams/strict/messages?limit=0", "limit 0", undefined],
        ["GET", "/storage/streams/strict/messages?limit=1001", "limit over 1,000", undefined],
        ["GET", "/storage/streams/strict/messages?subject=ord*", "a partial wildcard", undefined],
        ["GET", "/storage/streams/strict/messages?subject=a.%3E.b", "> before the last token", undefined],
        ["GET", `/storage/streams/strict/messages?subject=${long}`, "an 8,000-character filter", undefined],
        ["DELETE", "/storage/streams/a%00b", "a NUL in the name", undefined],
      ];
      for (const [method, path, label, json] of cases) {
        const answer = await call(api, owner, method, path, json);
        // The spec's code text, and the problems that name the fields at fault.
        const named = Array.isArray(answer.body.problems) && answer.body.problems.length > 0;
        expect({ label, status: answer.status, error: answer.body.error, named }).toEqual({
          label,
          status: 400,
          error: "validation_error",
          named: true,
        });
      }
      const oversized = { big: "x".repeat(1024 * 1024) };
      expect(await publish("strict", "big", oversized)).toMatchObject(storageError(413, "payload_too_large"));
      // Just under the limit is fine: 1 MiB of JSON, braces and quotes included.
      const fits = { b: "x".repeat(1024 * 1024 - 8) };
      expect(Buffer.byteLength(JSON.stringify(fits))).toBe(1024 * 1024);
      expect((await publish("strict", "big", fits)).status).toBe(200);
      expect((await read("strict")).body.data.map((m: { seq: number }) => m.seq)).toEqual([1]);
    });

    test("tRPC reaches the same operations as storage.streams.*", async () => {
      const trpc = (procedure: string, input: unknown, method: "GET" | "POST") =>
        method === "POST"
          ? api.request(`/trpc/storage.streams.${procedure}`, { method, headers: owner.headers, json: input })
          : api.request(`/trpc/storage.streams.${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`, {
              headers: owner.headers,
            });
      expect((await trpc("put", { name: "typed", max_messages: 10 }, "POST")).status).toBe(200);
      expect(
        (await trpc("publish", { name: "typed", stream: "typed", subject: "t.1", body: { ok: true } }, "POST")).status,
      ).toBe(200);
      const listed = await trpc("list", { name: "typed", subject: "t.*" }, "GET");
      expect(((await listed.json()) as { result: { data: unknown } }).result.data).toEqual({
        data: [expect.objectContaining({ seq: 1, subject: "t.1", body: { ok: true } })],
        next: null,
      });
      const hugeName = await trpc("put", { name: "x".repeat(100_000) }, "POST");
      expect(hugeName.status).toBe(400);
      const missing = await trpc("publish", { name: "nope", stream: "nope", subject: "x", body: {} }, "POST");
      expect(missing.status).toBe(404);
      expect(((await missing.json()) as { error: { data: { domainCode: string } } }).error.data.domainCode).toBe(
        "not_found",
      );
      expect((await trpc("delete", { name: "typed" }, "POST")).status).toBe(200);
    });
  });
}

/** The Broker stream behind an account's stream, to check what retention left in it. */
async function streamIdOf(api: TestApi, caller: Caller, name: string): Promise<string> {
  const row = await api.services.db
    .selectFrom("storage_streams")
    .select("id")
    .where("account_id", "=", caller.accountId)
    .where("name", "=", name)
    .executeTakeFirstOrThrow();
  return row.id;
}

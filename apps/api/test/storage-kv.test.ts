import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { buildOpenApiDocument, coreConfigSchema, toCoreConfig } from "@platform/core";
import { type Caller, call, newCaller, storageError } from "./context.ts";
import { adapterVariants, startTestApi, type TestApi } from "./harness.ts";

for (const { label: name, backend, redis, skip } of adapterVariants()) {
  describe.skipIf(Boolean(skip))(`storage KV on ${name}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis });
      owner = await newCaller(api, "kv");
    }, 60_000);
    afterAll(() => api.stop());

    const putBucket = (bucket: string, json: unknown = { description: "" }, as: Caller | null = owner) =>
      call(api, as, "PUT", `/storage/kv/${bucket}`, json);
    const getBucket = (bucket: string, as: Caller | null = owner) => call(api, as, "GET", `/storage/kv/${bucket}`);
    const deleteBucket = (bucket: string, as: Caller | null = owner) =>
      call(api, as, "DELETE", `/storage/kv/${bucket}`);
    const putKey = (bucket: string, key: string, json: unknown, as: Caller | null = owner) =>
      call(api, as, "PUT", `/storage/kv/${bucket}/keys/${key}`, json);
    const getKey = (bucket: string, key: string, as: Caller | null = owner) =>
      call(api, as, "GET", `/storage/kv/${bucket}/keys/${key}`);
    const deleteKey = (bucket: string, key: string, as: Caller | null = owner) =>
      call(api, as, "DELETE", `/storage/kv/${bucket}/keys/${key}`);
    const listKeys = (bucket: string, query = "", as: Caller | null = owner) =>
      call(api, as, "GET", `/storage/kv/${bucket}/keys${query}`);

    test("a bucket is created, read back with Unix-second times, and its description updated", async () => {
      const before = Math.floor(Date.now() / 1000);
      expect(await putBucket("settings", { description: "app settings" })).toMatchObject({
        status: 200,
        body: { message: "success" },
      });
      const read = await getBucket("settings");
      expect(read.status).toBe(200);
      expect(Object.keys(read.body).sort()).toEqual(["created", "description", "modified", "name"]);
      expect(read.body).toMatchObject({ name: "settings", description: "app settings" });
      expect(read.body.created).toBeGreaterThanOrEqual(before - 5);
      expect(read.body.created).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 5);

      expect((await putBucket("settings", { description: "renamed" })).status).toBe(200);
      const updated = await getBucket("settings");
      expect(updated.body).toMatchObject({ description: "renamed", created: read.body.created });
      expect(updated.body.modified).toBeGreaterThanOrEqual(read.body.created);
      // The spec's request carries a description; an empty body means an empty one.
      expect((await putBucket("no-description", {})).status).toBe(200);
      expect((await getBucket("no-description")).body.description).toBe("");
    });

    test("any JSON value is stored as written, with a revision that grows on every write", async () => {
      await putBucket("values");
      const values = [
        { nested: { list: [1, "two", null, { deep: true }] } },
        [1, 2, 3],
        "text with ünïcode",
        42.5,
        false,
        null,
        {},
      ];
      let last = 0;
      for (const [i, value] of values.entries()) {
        const before = Math.floor(Date.now() / 1000);
        const written = await putKey("values", `k${i}`, { value });
        expect(written.status).toBe(200);
        expect(written.body).toEqual({ message: "success", revision: expect.any(Number) });
        expect(written.body.revision).toBeGreaterThan(last);
        last = written.body.revision;
        const read = await getKey("values", `k${i}`);
        expect(read.status).toBe(200);
        expect(read.body).toEqual({
          key: `k${i}`,
          value,
          revision: written.body.revision,
          modified: expect.any(Number),
        });
        expect(read.body.modified).toBeGreaterThanOrEqual(before - 5);
      }
      const overwritten = await putKey("values", "k0", { value: "new" });
      expect(overwritten.body.revision).toBeGreaterThan(last);
      expect((await getKey("values", "k0")).body).toMatchObject({ value: "new", revision: overwritten.body.revision });
    });

    test("keys may hold / : @ = . _ -; a / travels as %2F", async () => {
      await putBucket("paths");
      for (const key of ["user/42", "tenant:7", "ada@example.com", "a=b", "v1.2_x-y"]) {
        const encoded = encodeURIComponent(key);
        expect((await putKey("paths", encoded, { value: key })).status).toBe(200);
        expect((await getKey("paths", encoded)).body).toMatchObject({ key, value: key });
      }
      expect((await listKeys("paths")).body.data).toEqual([
        "a=b",
        "ada@example.com",
        "tenant:7",
        "user/42",
        "v1.2_x-y",
      ]);
    });

    test("compare-and-set: revision 0 creates only, a matching revision updates, anything else is 409 with the current one", async () => {
      await putBucket("cas");
      const created = await putKey("cas", "lock", { value: "a", revision: 0 });
      expect(created.status).toBe(200);
      const taken = await putKey("cas", "lock", { value: "b", revision: 0 });
      expect(taken).toMatchObject(storageError(409, "conflict"));
      expect(taken.headers.get("x-current-revision")).toBe(String(created.body.revision));

      const updated = await putKey("cas", "lock", { value: "b", revision: created.body.revision });
      expect(updated.status).toBe(200);
      const stale = await putKey("cas", "lock", { value: "c", revision: created.body.revision });
      expect(stale).toMatchObject(storageError(409, "conflict"));
      expect(stale.headers.get("x-current-revision")).toBe(String(updated.body.revision));
      expect((await getKey("cas", "lock")).body.value).toBe("b");

      const absent = await putKey("cas", "never-written", { value: 1, revision: 5 });
      expect(absent).toMatchObject(storageError(409, "conflict"));
      expect(absent.headers.get("x-current-revision")).toBe("0");

      // Of concurrent writers from one revision, exactly one wins.
      const racing = await Promise.all(
        Array.from({ length: 10 }, (_, i) => putKey("cas", "lock", { value: i, revision: updated.body.revision })),
      );
      expect(racing.filter((answer) => answer.status === 200)).toHaveLength(1);
      expect(racing.filter((answer) => answer.status === 409)).toHaveLength(9);
    });

    test("a key with ttl_s expires: it reads, lists and deletes as missing, and revision 0 can create it again", async () => {
      await putBucket("sessions");
      expect((await putKey("sessions", "short", { value: "v", ttl_s: 1 })).status).toBe(200);
      await putKey("sessions", "kept", { value: "v" });
      expect((await getKey("sessions", "short")).body.value).toBe("v");
      await Bun.sleep(1100);
      expect(await getKey("sessions", "short")).toMatchObject(storageError(404, "not_found"));
      expect((await listKeys("sessions")).body).toEqual({ data: ["kept"], next: null });
      expect(await deleteKey("sessions", "short")).toMatchObject(storageError(404, "not_found"));
      expect((await putKey("sessions", "short", { value: "again", revision: 0 })).status).toBe(200);
      expect((await getKey("sessions", "short")).body.value).toBe("again");
    });

    test("keys list in byte order, paged by cursor, filtered by prefix", async () => {
      await putBucket("listing");
      const keys = ["user/1", "user/2", "user/10", "users", "user", "admin", "zed", "user:9"];
      for (const key of keys) await putKey("listing", encodeURIComponent(key), { value: 1 });
      const sorted = [...keys].sort();

      const seen: string[] = [];
      let cursor: string | null = null;
      for (let pages = 0; pages < 10; pages++) {
        const page: { body: { data: string[]; next: string | null } } = await listKeys(
          "listing",
          `?limit=3${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
        );
        seen.push(...page.body.data);
        cursor = page.body.next;
        if (cursor === null) break;
      }
      expect(seen).toEqual(sorted);
      expect((await listKeys("listing", "?limit=8")).body.next).toBeNull();

      expect((await listKeys("listing", "?prefix=user%2F")).body).toEqual({
        data: ["user/1", "user/10", "user/2"],
        next: null,
      });
      const firstOfPrefix = await listKeys("listing", "?prefix=user&limit=2");
      expect(firstOfPrefix.body).toEqual({ data: ["user", "user/1"], next: "user/1" });
      const rest = await listKeys("listing", "?prefix=user&limit=10&cursor=user%2F1");
      expect(rest.body).toEqual({ data: ["user/10", "user/2", "user:9", "users"], next: null });
      expect((await listKeys("listing", "?prefix=nobody")).body).toEqual({ data: [], next: null });
      expect((await listKeys("listing", "?prefix=")).body.data).toEqual(sorted);
    });

    test("missing buckets and keys are 404 not_found; a key needs its bucket first", async () => {
      await putBucket("present");
      for (const answer of [
        await getBucket("absent"),
        await deleteBucket("absent"),
        await putKey("absent", "k", { value: 1 }),
        await getKey("absent", "k"),
        await deleteKey("absent", "k"),
        await listKeys("absent"),
        await getKey("present", "missing"),
        await deleteKey("present", "missing"),
      ]) {
        expect(answer).toMatchObject(storageError(404, "not_found"));
      }
    });

    test("deleting a key and a bucket removes them; a bucket made again starts empty", async () => {
      await putBucket("temporary");
      await putKey("temporary", "a", { value: 1 });
      await putKey("temporary", "b", { value: 2 });
      expect((await deleteKey("temporary", "a")).body).toEqual({ message: "success" });
      expect(await getKey("temporary", "a")).toMatchObject(storageError(404, "not_found"));
      expect((await deleteBucket("temporary")).body).toEqual({ message: "success" });
      expect(await getBucket("temporary")).toMatchObject(storageError(404, "not_found"));
      expect(await getKey("temporary", "b")).toMatchObject(storageError(404, "not_found"));
      await putBucket("temporary");
      expect((await listKeys("temporary")).body).toEqual({ data: [], next: null });
      expect(await getKey("temporary", "b")).toMatchObject(storageError(404, "not_found"));
    });

    test("kv.keys counts the account's keys without a TTL, whatever writes and deletes come", async () => {
      const counter = await newCaller(api, "kv-metrics");
      const keys = () => api.services.metrics.read(counter.accountId, "kv.keys");
      await putBucket("one", {}, counter);
      await putBucket("two", {}, counter);
      await putKey("one", "a", { value: 1 }, counter);
      await putKey("one", "b", { value: 1 }, counter);
      await putKey("two", "a", { value: 1 }, counter);
      expect(await keys()).toBe(3);
      await putKey("one", "a", { value: 2 }, counter); // overwrite: no change
      expect(await keys()).toBe(3);
      await putKey("one", "a", { value: 3, ttl_s: 60 }, counter); // now expiring: off the count
      await putKey("one", "t", { value: 1, ttl_s: 60 }, counter); // never counted
      expect(await keys()).toBe(2);
      await putKey("one", "a", { value: 4 }, counter); // back without a TTL
      expect(await keys()).toBe(3);
      await deleteKey("one", "t", counter);
      await deleteKey("one", "b", counter);
      expect(await keys()).toBe(2);
      expect((await putKey("one", "b", { value: 5, revision: 0 }, counter)).status).toBe(200);
      expect(await keys()).toBe(3);
      await putKey("one", "e", { value: 1, ttl_s: 60 }, counter);
      await deleteBucket("one", counter); // a, b and the expiring e
      expect(await keys()).toBe(1);
      expect((await deleteKey("one", "a", counter)).status).toBe(404);
      expect((await putKey("two", "a", { value: 1, revision: 999_999_999 }, counter)).status).toBe(409);
      expect(await keys()).toBe(1);
    });

    test("accounts do not see each other's buckets or keys; names are unique per account only", async () => {
      const other = await newCaller(api, "kv-intruder");
      await putBucket("vault", { description: "mine" });
      await putKey("vault", "token", { value: "s3cret" });
      for (const answer of [
        await getBucket("vault", other),
        await deleteBucket("vault", other),
        await putKey("vault", "token", { value: "overwritten" }, other),
        await getKey("vault", "token", other),
        await deleteKey("vault", "token", other),
        await listKeys("vault", "", other),
      ]) {
        expect(answer).toMatchObject(storageError(404, "not_found"));
      }
      await putBucket("vault", { description: "theirs" }, other);
      expect(await getKey("vault", "token", other)).toMatchObject(storageError(404, "not_found"));
      await putKey("vault", "token", { value: "their own" }, other);
      expect((await getKey("vault", "token")).body.value).toBe("s3cret");
      expect((await getBucket("vault")).body.description).toBe("mine");
      await deleteBucket("vault", other);
      expect((await getKey("vault", "token")).body.value).toBe("s3cret");
    });

    test("every operation without a credential is 401 unauthorized", async () => {
      await putBucket("guarded");
      for (const answer of [
        await putBucket("guarded", { description: "x" }, null),
        await getBucket("guarded", null),
        await deleteBucket("guarded", null),
        await putKey("guarded", "k", { value: 1 }, null),
        await getKey("guarded", "k", null),
        await deleteKey("guarded", "k", null),
        await listKeys("guarded", "", null),
        await call(api, { headers: { "x-api-key": "wfk_not-a-key" } }, "GET", "/storage/kv/guarded"),
      ]) {
        expect(answer).toMatchObject(storageError(401, "unauthorized"));
      }
    });

    test("bad input is 400 validation_error, an oversized value 413 payload_too_large", async () => {
      await putBucket("strict");
      // A URL over 16 KiB is refused by the HTTP server itself (431); 8,000 characters reach the schema.
      const long = "x".repeat(8000);
      // Each names the field at fault, though the body answers only the spec's code text.
      const cases: [string, string, string, unknown, string][] = [
        ["PUT", `/storage/kv/${long}`, "an 8,000-character bucket", { description: "" }, "bucket"],
        ["PUT", `/storage/kv/${"b".repeat(65)}`, "a 65-character bucket", { description: "" }, "bucket"],
        ["PUT", "/storage/kv/-dash", "a bucket starting with a dash", { description: "" }, "bucket"],
        ["PUT", "/storage/kv/a%2Fb", "a / in a bucket", { description: "" }, "bucket"],
        ["GET", "/storage/kv/a%00b", "a NUL in a bucket", undefined, "bucket"],
        ["PUT", "/storage/kv/strict", "a description that is not text", { description: ["x"] }, "description"],
        [
          "PUT",
          "/storage/kv/strict",
          "a 1,025-character description",
          { description: "d".repeat(1025) },
          "description",
        ],
        ["PUT", `/storage/kv/strict/keys/${long}`, "an 8,000-character key", { value: 1 }, "key"],
        ["PUT", `/storage/kv/strict/keys/${"k".repeat(256)}`, "a 256-character key", { value: 1 }, "key"],
        ["PUT", "/storage/kv/strict/keys/a%20b", "a space in a key", { value: 1 }, "key"],
        ["PUT", "/storage/kv/strict/keys/%C3%A4", "a non-ASCII key", { value: 1 }, "key"],
        ["PUT", "/storage/kv/strict/keys/k", "no value", {}, "value"],
        ["PUT", "/storage/kv/strict/keys/k", "ttl_s as a string", { value: 1, ttl_s: "5" }, "ttl_s"],
        ["PUT", "/storage/kv/strict/keys/k", "ttl_s of 0", { value: 1, ttl_s: 0 }, "ttl_s"],
        ["PUT", "/storage/kv/strict/keys/k", "a fractional ttl_s", { value: 1, ttl_s: 1.5 }, "ttl_s"],
        ["PUT", "/storage/kv/strict/keys/k", "ttl_s as null", { value: 1, ttl_s: null }, "ttl_s"],
        ["PUT", "/storage/kv/strict/keys/k", "revision as a string", { value: 1, revision: "1" }, "revision"],
        ["PUT", "/storage/kv/strict/keys/k", "a negative revision", { value: 1, revision: -1 }, "revision"],
        ["PUT", "/storage/kv/strict/keys/k", "revision as a boolean", { value: 1, revision: true }, "revision"],
        ["GET", "/storage/kv/strict/keys?limit=0", "limit 0", undefined, "limit"],
        ["GET", "/storage/kv/strict/keys?limit=1001", "limit over 1,000", undefined, "limit"],
        ["GET", "/storage/kv/strict/keys?prefix=a%20b", "a space in a prefix", undefined, "prefix"],
        ["GET", `/storage/kv/strict/keys?prefix=${"p".repeat(256)}`, "a 256-character prefix", undefined, "prefix"],
        ["GET", `/storage/kv/strict/keys?cursor=${long}`, "an 8,000-character cursor", undefined, "cursor"],
        ["DELETE", "/storage/kv/strict/keys/a%00b", "a NUL in a key", undefined, "key"],
      ];
      for (const [method, path, label, json, field] of cases) {
        const answer = await call(api, owner, method, path, json);
        // One field may break more than one rule: each is named once here.
        const fields = [...new Set((answer.body.problems ?? []).map((problem: { path: string }) => problem.path))];
        expect({ label, status: answer.status, error: answer.body.error, fields }).toEqual({
          label,
          status: 400,
          error: "validation_error",
          fields: [field],
        });
      }

      const oversized = await putKey("strict", "big", { value: "x".repeat(1024 * 1024) });
      expect(oversized).toMatchObject(storageError(413, "payload_too_large"));
      // 1 MiB of JSON, quotes included, fits.
      expect((await putKey("strict", "big", { value: "x".repeat(1024 * 1024 - 2) })).status).toBe(200);
      expect((await getKey("strict", "big")).body.value).toHaveLength(1024 * 1024 - 2);
    });

    test("tRPC reaches the same operations as storage.kv.* and storage.kv.keys.*", async () => {
      const mutate = (procedure: string, input: unknown) =>
        api.request(`/trpc/storage.kv.${procedure}`, { method: "POST", headers: owner.headers, json: input });
      const query = async (procedure: string, input: unknown) => {
        const response = await api.request(
          `/trpc/storage.kv.${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`,
          { headers: owner.headers },
        );
        return { status: response.status, body: (await response.json()) as { result: { data: unknown } } };
      };
      expect((await mutate("put", { bucket: "typed", description: "over tRPC" })).status).toBe(200);
      expect((await query("get", { bucket: "typed" })).body.result.data).toMatchObject({ description: "over tRPC" });
      expect((await mutate("keys.put", { bucket: "typed", key: "k", value: { a: 1 } })).status).toBe(200);
      expect((await query("keys.get", { bucket: "typed", key: "k" })).body.result.data).toMatchObject({
        value: { a: 1 },
      });
      expect((await query("keys.list", { bucket: "typed", prefix: "k" })).body.result.data).toEqual({
        data: ["k"],
        next: null,
      });
      const conflict = await mutate("keys.put", { bucket: "typed", key: "k", value: 2, revision: 0 });
      expect(conflict.status).toBe(409);
      const failure = (await conflict.json()) as { error: { data: { code: string; domainCode: string } } };
      expect(failure.error.data).toMatchObject({ code: "CONFLICT", domainCode: "conflict" });
      expect((await mutate("keys.delete", { bucket: "typed", key: "k" })).status).toBe(200);
      expect((await mutate("delete", { bucket: "typed" })).status).toBe(200);
    });
  });
}

test("the OpenAPI document describes each storage error as storage answers it", () => {
  const document = buildOpenApiDocument(toCoreConfig(coreConfigSchema.parse({ LOG_LEVEL: "silent" })));
  const paths = document.paths as Record<
    string,
    Record<string, { responses: Record<string, { description: string }> }>
  >;
  const describe_ = (path: string, method: string) =>
    Object.fromEntries(
      Object.entries(paths[path]?.[method]?.responses ?? {}).map(([status, response]) => [
        status,
        response.description,
      ]),
    );
  expect(describe_("/storage/kv/{bucket}/keys/{key}", "put")).toMatchObject({
    404: "`not_found`: stream, bucket or key missing",
    409: "`conflict`: the key is not at `revision` (see `X-Current-Revision`)",
    413: "`payload_too_large`: value over 1 MiB of JSON",
  });
  expect(describe_("/storage/streams/{name}/messages", "get")).toMatchObject({
    400: "`validation_error`: invalid input",
  });
});

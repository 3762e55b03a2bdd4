import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, createFlow, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`runs: the account's list on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true });
    }, 60_000);
    afterAll(async () => {
      await api?.stop();
    });

    test("GET /runs lists every flow's runs of the account, newest first, filtered and paged, and /runs/activity counts them for charts; never another account's", async () => {
      const owner = await newCaller(api, "account-runs");
      const stranger = await newCaller(api, "account-runs-other");
      const ok = await createFlow(api, owner);
      const failing = await createFlow(api, owner, [
        { name: "save", subject: "kv.put", payload: { bucket: "missing", key: "k", value: 1 } },
      ]);
      const theirs = await createFlow(api, stranger);
      const started: string[] = [];
      for (const flowId of [ok, failing, ok, failing, ok]) {
        const { body } = await startRun(api, owner, flowId, {});
        started.push(body.run_id);
        await runUntil(api, owner, body.run_id);
      }
      await startRun(api, stranger, theirs, {});

      const all = await call(api, owner, "GET", "/runs");
      expect(all.status).toBe(200);
      expect(all.body.data.map((run: { id: string }) => run.id)).toEqual([...started].reverse());
      expect(all.body.data.map((run: { flow_id: string }) => run.flow_id)).toEqual([ok, failing, ok, failing, ok]);
      expect(all.body.next_cursor).toBeNull();

      const failed = await call(api, owner, "GET", "/runs?status=failed");
      expect(failed.body.data.map((run: { id: string }) => run.id)).toEqual([started[3], started[1]]);

      const first = await call(api, owner, "GET", "/runs?limit=2");
      expect(first.body.data.map((run: { id: string }) => run.id)).toEqual([started[4], started[3]]);
      const second = await call(api, owner, "GET", `/runs?limit=2&cursor=${first.body.next_cursor}`);
      expect(second.body.data.map((run: { id: string }) => run.id)).toEqual([started[2], started[1]]);

      const later = await call(
        api,
        owner,
        "GET",
        `/runs?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
      );
      expect(later.body.data).toEqual([]);
      expect((await call(api, owner, "GET", "/runs?limit=0")).status).toBe(400);
      expect((await call(api, null, "GET", "/runs")).status).toBe(401);

      // The same runs, counted for a chart: all in the current minute's bucket of the hour.
      const hour = await call(api, owner, "GET", "/runs/activity");
      expect(hour.status).toBe(200);
      expect(hour.body.data.bucket_s).toBe(60);
      expect(hour.body.data.buckets).toHaveLength(60);
      const total = (key: string, buckets: Record<string, number>[]) =>
        buckets.reduce((sum, b) => sum + (b[key] ?? 0), 0);
      expect(
        ["accepted", "succeeded", "failed", "deliveries"].map((key) => total(key, hour.body.data.buckets)),
      ).toEqual([5, 3, 2, 5]);
      const day = await call(api, owner, "GET", `/runs/activity?window=day&flow_id=${failing}`);
      expect(day.body.data.buckets).toHaveLength(96);
      expect(total("failed", day.body.data.buckets)).toBe(2);
      expect(total("accepted", day.body.data.buckets)).toBe(2);
      expect((await call(api, stranger, "GET", `/runs/activity?flow_id=${failing}`)).status).toBe(404);
      expect((await call(api, owner, "GET", "/runs/activity?window=week")).body.error).toContain("window");

      // A key that names neither is refused both; one that names them reads them.
      const flowsOnly = await call(api, owner, "POST", "/accounts/api-keys", {
        name: "flows",
        allowed_paths: ["GET /flows"],
      });
      const flowsKey = { headers: { "x-api-key": flowsOnly.body.data.key as string } };
      expect((await call(api, flowsKey, "GET", "/runs")).status).toBe(403);
      expect((await call(api, flowsKey, "GET", "/runs/activity")).status).toBe(403);
      const runsReader = await call(api, owner, "POST", "/accounts/api-keys", {
        name: "runs",
        allowed_paths: ["GET /runs", "GET /runs/activity"],
      });
      const runsKey = { headers: { "x-api-key": runsReader.body.data.key as string } };
      expect((await call(api, runsKey, "GET", "/runs")).body.data).toHaveLength(5);
      expect((await call(api, runsKey, "GET", "/runs/activity")).status).toBe(200);
    });

    test("a time outside the years 0001 to 9999 is a 400 naming the field on every operation that takes one, REST and tRPC alike", async () => {
      const owner = await newCaller(api, "account-runs-times");
      const flowId = await createFlow(api, owner);
      const refused = (field: string) => ({
        status: 400,
        body: { error: `invalid input: ${field}: must be a time in the years 0001 to 9999` },
      });
      // PostgreSQL's timestamptz ends at 4713 BC; JavaScript reads expanded years up to 275760.
      for (const time of [
        "-004714-01-01T00:00:00Z",
        "-100000-01-01T00:00:00Z",
        "0000-12-31T23:59:59Z",
        "+010000-01-01T00:00:00Z",
      ]) {
        const at = encodeURIComponent(time);
        expect(await call(api, owner, "GET", `/runs?from=${at}`)).toMatchObject(refused("from"));
        expect(await call(api, owner, "GET", `/runs?to=${at}`)).toMatchObject(refused("to"));
        expect(await call(api, owner, "GET", `/flows/${flowId}/runs?from=${at}`)).toMatchObject(refused("from"));
        expect(await call(api, owner, "POST", `/flows/${flowId}/runs/replay`, { to: time })).toMatchObject(
          refused("to"),
        );
        const trpc = await call(
          api,
          owner,
          "GET",
          `/trpc/runs.listAll?input=${encodeURIComponent(JSON.stringify({ from: time }))}`,
        );
        expect({ status: trpc.status, message: trpc.body.error?.message }).toEqual({
          status: 400,
          message: "invalid input: from: must be a time in the years 0001 to 9999",
        });
      }
      // The first and the last moment of the range are times like any other.
      const edges = `from=${encodeURIComponent("0001-01-01T00:00:00Z")}&to=${encodeURIComponent("9999-12-31T23:59:59.999Z")}`;
      expect(await call(api, owner, "GET", `/runs?${edges}`)).toMatchObject({ status: 200, body: { data: [] } });
      expect(await call(api, owner, "GET", `/flows/${flowId}/runs?${edges}`)).toMatchObject({ status: 200 });
    });
  });
}

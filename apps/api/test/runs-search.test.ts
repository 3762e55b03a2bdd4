import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/** Run search by trigger data (issue 19): `?where=<dotted path>&equals=<value>` on a flow's runs. */
for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`run search on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let flowId: string;
    const runs: Record<string, string> = {};

    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true });
      owner = await newCaller(api, "run-search");
      const created = await call(api, owner, "POST", "/flows", {
        name: "charges",
        steps: [{ name: "s", subject: "transform", payload: {} }],
      });
      flowId = created.body.data.id;
      const triggers = {
        cus1: { body: { data: { object: { customer: "cus_123", amount: 500 } } } },
        cus1again: { body: { data: { object: { customer: "cus_123", amount: 700 } } } },
        cus2: { body: { data: { object: { customer: "cus_456", amount: 500 } } } },
        nested: { body: { data: { object: { customer: { id: "cus_123" } } } } },
      };
      for (const [name, trigger] of Object.entries(triggers)) {
        runs[name] = (await startRun(api, owner, flowId, trigger)).body.run_id;
      }
      await Promise.all(Object.values(runs).map((id) => runUntil(api, owner, id)));
    }, 60_000);
    afterAll(() => api.stop());

    const search = async (query: string) => {
      const answer = await call(api, owner, "GET", `/flows/${flowId}/runs?${query}`);
      expect(answer.status).toBe(200);
      return answer.body.data.map((run: { id: string }) => run.id);
    };

    test("the runs whose trigger data holds the value at the path, newest first", async () => {
      expect(await search("where=body.data.object.customer&equals=cus_123")).toEqual([runs.cus1again, runs.cus1]);
      expect(await search("where=body.data.object.customer.id&equals=cus_123")).toEqual([runs.nested]);
      expect(await search("where=body.data.object.customer&equals=nobody")).toEqual([]);
    });

    test("text that spells a number matches the number; other filters and pages combine with it", async () => {
      expect(await search("where=body.data.object.amount&equals=500")).toEqual([runs.cus2, runs.cus1]);
      expect(await search("where=body.data.object.amount&equals=500&status=failed")).toEqual([]);
      const first = await call(
        api,
        owner,
        "GET",
        `/flows/${flowId}/runs?where=body.data.object.amount&equals=500&limit=1`,
      );
      expect(first.body.data.map((run: { id: string }) => run.id)).toEqual([runs.cus2]);
      expect(await search(`where=body.data.object.amount&equals=500&cursor=${first.body.next_cursor}`)).toEqual([
        runs.cus1,
      ]);
    });

    test("another account finds nothing; `where` without `equals` (or a bad path) is a 400 naming it", async () => {
      const stranger = await newCaller(api, "run-search-stranger");
      expect(
        await call(api, stranger, "GET", `/flows/${flowId}/runs?where=body.data.object.customer&equals=cus_123`),
      ).toMatchObject({ status: 404, body: { error: "flow not found" } });
      expect(await call(api, owner, "GET", `/flows/${flowId}/runs?where=body.customer`)).toMatchObject({
        status: 400,
        body: { error: "invalid input: equals: must be given with `where`" },
      });
      expect(await call(api, owner, "GET", `/flows/${flowId}/runs?where=body..customer&equals=x`)).toMatchObject({
        status: 400,
        body: {
          error: "invalid input: where: must be a dotted path of the trigger data, such as body.data.object.customer",
        },
      });
    });
  });
}

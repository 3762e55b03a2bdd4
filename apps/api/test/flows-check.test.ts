import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, newCaller } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`flows: checking a draft on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis });
    }, 60_000);
    afterAll(async () => {
      await api?.stop();
    });

    test("POST /flows/validate answers every problem with its path, saves nothing, and is refused to a key that does not name it", async () => {
      const owner = await newCaller(api, "flow-check");
      const stranger = await newCaller(api, "flow-check-other");
      const strangersNode = await call(api, stranger, "POST", "/hub/nodes", {
        collection: "c",
        data: { name: "n", node_type: "function", subject: "transform", payload: {}, options: {} },
      });
      expect(strangersNode.status).toBe(200);

      const bad = await call(api, owner, "POST", "/flows/validate", {
        name: "",
        steps: [{ name: "a", subject: "no.such.subject", payload: {} }],
      });
      expect(bad.status).toBe(200);
      expect(bad.body.data.valid).toBe(false);
      expect(bad.body.data.problems.map((p: { path: string }) => p.path)).toEqual(
        expect.arrayContaining(["name", "steps.0.subject"]),
      );

      // Rules that need the account: another account's node is no node of this one.
      const foreign = await call(api, owner, "POST", "/flows/validate", {
        name: "uses a node",
        steps: [{ name: "a", node: `nodes.${strangersNode.body.data.id}` }],
      });
      expect(foreign.body.data.valid).toBe(false);
      expect(foreign.body.data.problems[0].path).toStartWith("steps.0");

      const good = await call(api, owner, "POST", "/flows/validate", {
        name: "fine",
        steps: [{ name: "a", subject: "transform", payload: {} }],
      });
      expect(good.body.data).toEqual({ valid: true, problems: [] });
      expect((await call(api, owner, "GET", "/flows")).body.data).toEqual([]);

      const key = await call(api, owner, "POST", "/accounts/api-keys", { name: "r", allowed_paths: ["GET /flows"] });
      const reader = { headers: { "x-api-key": key.body.data.key as string } };
      expect((await call(api, reader, "POST", "/flows/validate", { name: "x", steps: [] })).status).toBe(403);
      expect((await call(api, null, "POST", "/flows/validate", {})).status).toBe(401);
    });
  });
}

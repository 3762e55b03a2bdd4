import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppRouter } from "@platform/core";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { bearer, readBody, signUp } from "./accounts-helpers.ts";
import { createFlow } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";
import { invalidInput } from "./invalid-input.ts";

const MISSING = { error: "The requested resource does not exist" };

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`gateways control plane on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Record<string, string>;
    let other: Record<string, string>;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis });
      const mine = await signUp(api, "gw-owner");
      owner = bearer(mine.auth.auth_token);
      const theirs = await signUp(api, "gw-other");
      other = bearer(theirs.auth.auth_token);
    }, 60_000);
    afterAll(() => api.stop());

    const create = (body: unknown, headers = owner) => api.request("/gateway", { method: "POST", headers, json: body });
    const get = (topic: string, headers = owner) => api.request(`/gateway/${topic}`, { headers });
    const patch = (topic: string, body: unknown, headers = owner) =>
      api.request(`/gateway/${topic}`, { method: "PATCH", headers, json: body });
    const remove = (topic: string, headers = owner) => api.request(`/gateway/${topic}`, { method: "DELETE", headers });
    const list = (headers = owner) => api.request("/gateway", { headers });
    const map = (topic: string, body: unknown, headers = owner) =>
      api.request(`/gateway/${topic}/mapping`, { method: "POST", headers, json: body });
    const mappings = (topic: string, headers = owner) => api.request(`/gateway/${topic}/mapping`, { headers });
    const unmap = (topic: string, query: Record<string, string>, headers = owner) =>
      api.request(`/gateway/${topic}/mapping/details?${new URLSearchParams(query)}`, { method: "DELETE", headers });
    const expectAnswer = async (response: Promise<Response>, status: number, body: unknown) => {
      const answered = await response;
      expect({ status: answered.status, body: await readBody(answered) }).toEqual({ status, body });
    };

    test("a gateway created with only a name gets a generated subject, its public url and the defaults", async () => {
      const before = Math.floor(Date.now() / 1000);
      const response = await create({ name: "orders api" });
      expect(response.status).toBe(200);
      const created = await readBody(response);
      const subject = created.body.subject;
      expect(subject).toMatch(/^[0-9a-f]{16}$/);
      expect(created).toEqual({
        body: {
          name: "orders api",
          description: "",
          url: `${api.services.config.publicUrl}/gw/${subject}`,
          subject,
          active: true,
          timeout: 30_000,
          limit: { request: 1000, time: 1 },
          modified: expect.any(Number),
          type: "http",
        },
        metadata: { subject },
      });
      expect(created.body.modified).toBeGreaterThanOrEqual(before - 1);
      expect(created.body.modified).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 1);
      await expectAnswer(get(subject), 200, created);
    });

    test("a gateway is read, listed and changed field by field; subject and url cannot change", async () => {
      const response = await create({
        name: "shop",
        description: "the shop's API",
        subject: "shop-v1.eu",
        active: false,
        timeout: 2500,
        limit: { request: 5, time: 60 },
        type: "http",
      });
      expect(response.status).toBe(200);
      const created = (await readBody(response)).body;
      expect(created).toMatchObject({
        subject: "shop-v1.eu",
        active: false,
        timeout: 2500,
        limit: { request: 5, time: 60 },
      });
      const listed = (await readBody(await list())).data.map((g: { subject: string }) => g.subject);
      expect(listed).toContain("shop-v1.eu");

      const changed = await patch("shop-v1.eu", { active: true, limit: { request: 10, time: 1 } });
      expect(changed.status).toBe(200);
      expect(await readBody(changed)).toEqual({
        body: { ...created, active: true, limit: { request: 10, time: 1 }, modified: expect.any(Number) },
        metadata: { subject: "shop-v1.eu" },
      });
      expect((await readBody(await get("shop-v1.eu"))).body).toMatchObject({
        active: true,
        description: "the shop's API",
      });

      await expectAnswer(
        patch("shop-v1.eu", { subject: "other" }),
        400,
        invalidInput(["subject", "cannot be changed"]),
      );
      await expectAnswer(
        patch("shop-v1.eu", { url: "http://elsewhere" }),
        400,
        invalidInput(["url", "cannot be changed"]),
      );
      await expectAnswer(
        patch("shop-v1.eu", { active: "false" }),
        400,
        invalidInput(["active", "must be true or false"]),
      );
      expect((await readBody(await get("shop-v1.eu"))).body.active).toBe(true);
      await expectAnswer(patch("no-such-gateway", { name: "x" }), 404, MISSING);
    });

    test("bad fields are 400s naming the field", async () => {
      const cases: [unknown, ReturnType<typeof invalidInput>][] = [
        [{}, invalidInput(["name", "is required"])],
        [{ name: "" }, invalidInput(["name", "must not be empty"])],
        [
          { name: "x", subject: "a/b" },
          invalidInput(["subject", "must be 1-64 letters, digits, _, - or ., not starting with ."]),
        ],
        [
          { name: "x", subject: ".hidden" },
          invalidInput(["subject", "must be 1-64 letters, digits, _, - or ., not starting with ."]),
        ],
        [{ name: "x", timeout: 0 }, invalidInput(["timeout", "Too small: expected number to be >=1"])],
        [{ name: "x", timeout: "100" }, invalidInput(["timeout", "must be a number"])],
        [
          { name: "x", limit: { request: 0, time: 1 } },
          invalidInput(["limit.request", "Too small: expected number to be >=1"]),
        ],
        [{ name: "x", limit: { request: 1 } }, invalidInput(["limit.time", "is required"])],
        [{ name: "x", type: "grpc" }, invalidInput(["type", 'must be "http"'])],
      ];
      for (const [body, answer] of cases) await expectAnswer(create(body), 400, answer);
    });

    test("another account neither sees nor takes a gateway: 404 for reads and changes, 409 for its subject", async () => {
      expect((await create({ name: "private", subject: "private-gw" })).status).toBe(200);
      await expectAnswer(get("private-gw", other), 404, MISSING);
      await expectAnswer(patch("private-gw", { name: "mine now" }, other), 404, MISSING);
      await expectAnswer(remove("private-gw", other), 404, MISSING);
      await expectAnswer(mappings("private-gw", other), 404, MISSING);
      await expectAnswer(create({ name: "copy", subject: "private-gw" }, other), 409, {
        error: "the subject private-gw is taken: choose another",
      });
      expect((await readBody(await list(other))).data).toEqual([]);
      expect((await readBody(await get("private-gw"))).body.name).toBe("private");
    });

    test("subjects are unique whatever their case: ASHOP beside ashop is taken, for anyone", async () => {
      expect((await create({ name: "shop", subject: "ashop" })).status).toBe(200);
      await expectAnswer(create({ name: "look-alike", subject: "ASHOP" }, other), 409, {
        error: "the subject ASHOP is taken: choose another",
      });
      await expectAnswer(create({ name: "twin", subject: "AShop" }), 409, {
        error: "the subject AShop is taken: choose another",
      });
      // The account's own deleted subject comes back in the case it now asks for.
      await expectAnswer(remove("ashop"), 200, { message: "success" });
      await expectAnswer(create({ name: "look-alike", subject: "aShop" }, other), 409, {
        error: "the subject aShop is taken: choose another",
      });
      const back = await create({ name: "shop again", subject: "AShop" });
      expect((await readBody(back)).body).toMatchObject({ subject: "AShop", name: "shop again" });
      await expectAnswer(get("ashop"), 404, MISSING);
    });

    test("concurrent creates of one subject, in any case: one gateway each time, the others 409, never a 500", async () => {
      for (let round = 0; round < 10; round++) {
        const subject = `race-${round}`;
        const answers = await Promise.all(
          [subject, subject, subject.toUpperCase(), subject, subject, subject.toUpperCase(), subject, subject].map(
            (wanted, n) => create({ name: "racer", subject: wanted }, n % 2 === 0 ? undefined : other),
          ),
        );
        const statuses = answers.map((answer) => answer.status).sort();
        expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
      }
    });

    test("a deleted gateway is gone for reads, lists and changes; its subject stays reserved for its account", async () => {
      const flowId = await createFlow(api, { headers: owner });
      expect((await create({ name: "short-lived", subject: "temp-gw" })).status).toBe(200);
      expect((await map("temp-gw", { method: "GET", path: "/a", flow_id: flowId })).status).toBe(200);
      await expectAnswer(remove("temp-gw"), 200, { message: "success" });
      await expectAnswer(get("temp-gw"), 404, MISSING);
      await expectAnswer(remove("temp-gw"), 404, MISSING);
      await expectAnswer(patch("temp-gw", { name: "back" }), 404, MISSING);
      await expectAnswer(mappings("temp-gw"), 404, MISSING);
      await expectAnswer(map("temp-gw", { method: "GET", path: "/b", flow_id: flowId }), 404, MISSING);
      const subjects = (await readBody(await list())).data.map((g: { subject: string }) => g.subject);
      expect(subjects).not.toContain("temp-gw");

      await expectAnswer(create({ name: "squatter", subject: "temp-gw" }, other), 409, {
        error: "the subject temp-gw is taken: choose another",
      });
      const again = await create({ name: "second life", subject: "temp-gw" });
      expect(again.status).toBe(200);
      expect((await readBody(again)).body).toMatchObject({ name: "second life", active: true });
      await expectAnswer(mappings("temp-gw"), 200, { data: [] });
      await expectAnswer(create({ name: "twin", subject: "temp-gw" }), 409, {
        error: "the subject temp-gw is taken: choose another",
      });
    });

    test("mappings are created, listed and deleted by method and path; an existing route is 409", async () => {
      const flowId = await createFlow(api, { headers: owner });
      const otherFlow = await createFlow(api, { headers: owner });
      expect((await create({ name: "routes", subject: "routes-gw" })).status).toBe(200);
      await expectAnswer(map("routes-gw", { method: "GET", path: "/orders/:id", flow_id: flowId }), 200, {
        data: { method: "GET", path: "/orders/:id", flow_id: flowId },
      });
      for (const [method, path] of [
        ["POST", "/orders/:id"],
        ["GET", "/orders/new"],
        ["GET", "/"],
        ["DELETE", "/orders/:id/items/:item"],
      ] as const) {
        expect((await map("routes-gw", { method, path, flow_id: otherFlow })).status).toBe(200);
      }
      await expectAnswer(map("routes-gw", { method: "GET", path: "/orders/:id", flow_id: otherFlow }), 409, {
        error: "a mapping for GET /orders/:id exists",
      });
      // Only the parameter's name differs: it would match the same requests, and the answer names the one in the way.
      await expectAnswer(map("routes-gw", { method: "GET", path: "/orders/:key", flow_id: otherFlow }), 409, {
        error: "a mapping for GET /orders/:id exists",
      });
      const listed = await readBody(await mappings("routes-gw"));
      expect(listed.data).toEqual([
        { method: "GET", path: "/orders/:id", flow_id: flowId },
        { method: "POST", path: "/orders/:id", flow_id: otherFlow },
        { method: "GET", path: "/orders/new", flow_id: otherFlow },
        { method: "GET", path: "/", flow_id: otherFlow },
        { method: "DELETE", path: "/orders/:id/items/:item", flow_id: otherFlow },
      ]);

      await expectAnswer(unmap("routes-gw", { method: "GET", path: "/orders/:id" }), 200, { message: "success" });
      await expectAnswer(unmap("routes-gw", { method: "GET", path: "/orders/:id" }), 404, MISSING);
      await expectAnswer(unmap("routes-gw", { method: "PUT", path: "/orders/new" }), 404, MISSING);
      await expectAnswer(unmap("no-such-gateway", { method: "GET", path: "/" }), 404, MISSING);
      await expectAnswer(unmap("routes-gw", { method: "GET", path: "/orders/new" }, other), 404, MISSING);
      // Deleted, the route is free again.
      expect((await map("routes-gw", { method: "GET", path: "/orders/:key", flow_id: otherFlow })).status).toBe(200);
      const after = (await readBody(await mappings("routes-gw"))).data.map(
        (m: { method: string; path: string }) => `${m.method} ${m.path}`,
      );
      expect(after).toEqual([
        "POST /orders/:id",
        "GET /orders/new",
        "GET /",
        "DELETE /orders/:id/items/:item",
        "GET /orders/:key",
      ]);
    });

    test("a mapping names an existing flow of the same account, a valid method and a valid path", async () => {
      const mine = await createFlow(api, { headers: owner });
      const theirs = await createFlow(api, { headers: other });
      expect((await create({ name: "checks", subject: "checks-gw" })).status).toBe(200);
      const noFlow = invalidInput(["flow_id", "the account has no flow with this id"]);
      await expectAnswer(map("checks-gw", { method: "GET", path: "/x", flow_id: theirs }), 400, noFlow);
      await expectAnswer(map("checks-gw", { method: "GET", path: "/x", flow_id: crypto.randomUUID() }), 400, noFlow);
      await expectAnswer(
        map("checks-gw", { method: "GET", path: "/x", flow_id: "flow-1" }),
        400,
        invalidInput(["flow_id", "must be a UUID"]),
      );
      await expectAnswer(
        map("checks-gw", { method: "get", path: "/x", flow_id: mine }),
        400,
        invalidInput(["method", "must be one of GET, POST, PUT, DELETE, PATCH, OPTIONS, HEAD"]),
      );
      const paths: [string, string][] = [
        ["orders", "must start with /"],
        ["/orders/", "must not end with / or hold an empty segment"],
        ["/a//b", "must not end with / or hold an empty segment"],
        ["/a/../b", "must not hold . or .. segments"],
        ["/a b", "segment a b may hold only letters, digits, -, ., _ and ~ (or be a parameter :name)"],
        ["/:1st", "parameter :1st must be : then a letter or _, then letters, digits or _ (at most 64)"],
        ["/:id/:id", "names the parameter :id twice"],
        [`/${"a".repeat(1000)}`, "must be at most 1000 characters"],
      ];
      for (const [path, problem] of paths) {
        await expectAnswer(
          map("checks-gw", { method: "GET", path, flow_id: mine }),
          400,
          invalidInput(["path", problem]),
        );
      }
      await expectAnswer(map("checks-gw", { method: "GET", path: "/x", flow_id: mine }, other), 404, MISSING);
      await expectAnswer(unmap("checks-gw", { method: "GET" }), 400, invalidInput(["path", "is required"]));
      await expectAnswer(
        unmap("checks-gw", { method: "TRACE", path: "/x" }),
        400,
        invalidInput(["method", "must be one of GET, POST, PUT, DELETE, PATCH, OPTIONS, HEAD"]),
      );
      await expectAnswer(
        unmap("checks-gw", { method: "GET", path: "x" }),
        400,
        invalidInput(["path", "must start with /"]),
      );
    });

    test("no credential is 401", async () => {
      await expectAnswer(list({}), 401, { error: "missing credential" });
      await expectAnswer(create({ name: "x" }, {}), 401, { error: "missing credential" });
    });

    test("tRPC clients reach the same operations as gateway.*", async () => {
      const { auth } = await signUp(api, "gw-trpc");
      const client = createTRPCClient<AppRouter>({
        links: [httpLink({ url: `${api.url}/trpc`, headers: bearer(auth.auth_token) })],
      });
      const flowId = await createFlow(api, { headers: bearer(auth.auth_token) });
      const created = await client.gateway.create.mutate({ name: "typed", subject: "typed-gw" });
      expect(created.metadata.subject).toBe("typed-gw");
      expect((await client.gateway.get.query({ gateway_topic: "typed-gw" })).body.name).toBe("typed");
      expect((await client.gateway.update.mutate({ gateway_topic: "typed-gw", timeout: 100 })).body.timeout).toBe(100);
      expect((await client.gateway.list.query()).data.map((g) => g.subject)).toEqual(["typed-gw"]);
      expect(
        await client.gateway.mappings.create.mutate({
          gateway_topic: "typed-gw",
          method: "PUT",
          path: "/p",
          flow_id: flowId,
        }),
      ).toEqual({ data: { method: "PUT", path: "/p", flow_id: flowId } });
      expect((await client.gateway.mappings.list.query({ gateway_topic: "typed-gw" })).data).toHaveLength(1);
      expect(
        await client.gateway.mappings.delete.mutate({ gateway_topic: "typed-gw", method: "PUT", path: "/p" }),
      ).toEqual({ message: "success" });
      expect(await client.gateway.delete.mutate({ gateway_topic: "typed-gw" })).toEqual({ message: "success" });
      const missing = await client.gateway.get.query({ gateway_topic: "typed-gw" }).catch((error: unknown) => error);
      expect(missing).toBeInstanceOf(TRPCClientError);
      expect((missing as TRPCClientError<AppRouter>).data).toMatchObject({ domainCode: "not_found", httpStatus: 404 });
    });
  });
}

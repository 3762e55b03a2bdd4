import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bearer, readBody, signUp } from "./accounts-helpers.ts";
import { createNode, type FlowsClient, flowsClient, minimalFlow, stripeFlow } from "./flows-helpers.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";
import { problemsAsText } from "./invalid-input.ts";

/**
 * Everything a run could only discover late is a 400 when the flow is saved, naming the
 * field: unknown subjects and nodes, duplicate step names, references to steps that do not
 * run before, malformed templates, and a trigger whose settings do not fit together.
 */

const SUBJECTS =
  "http.request, kv.get, kv.put, stream.publish, transform, respond, delay, js, wait.event, event.send, flow.call, mcp.call";
const LATER = "a step sees only the steps before it";
const UNKNOWN_NODE = "nodes.00000000-0000-4000-8000-000000000001";

const withStep = (step: Record<string, unknown>) => ({
  name: "x",
  steps: [{ name: "a", subject: "transform", ...step }],
});
const withTrigger = (trigger: unknown) => ({ ...minimalFlow(), trigger });
const transform = (name: string, payload: Record<string, unknown> = {}) => ({ name, subject: "transform", payload });

/** A refusal as the cases compare it: its text, and its problems read back as that text. */
const refusalOf = (body: { error: string; problems?: { path: string; message: string }[] }) => ({
  error: body.error,
  problems: problemsAsText(body),
});

/** [what is wrong, the body, the whole error text]. */
const CASES: [string, unknown, string][] = [
  ["nothing", {}, "name: is required; steps: is required"],
  [
    "an empty name and no steps",
    { name: "", steps: [] },
    "name: must not be empty; steps: must hold at least one step",
  ],
  [
    "a name and description too long",
    { name: "x".repeat(201), description: "d".repeat(2001), steps: minimalFlow().steps },
    "name: must be at most 200 characters; description: must be at most 2000 characters",
  ],
  [
    "101 steps",
    { name: "x", steps: Array.from({ length: 101 }, (_, i) => transform(`s${i}`)) },
    "steps: must hold at most 100 steps",
  ],
  ["steps that are not a list", { name: "x", steps: "nope" }, "steps: must be an array"],
  ["active as text", { ...minimalFlow(), active: "false" }, "active: must be true or false"],
  ["active null", { ...minimalFlow(), active: null }, "active: must be true or false"],
  [
    "a step with neither subject nor node",
    { name: "x", steps: [{ name: "a" }] },
    "steps.0.subject: is required (or node: a node template's subject, or one of switch, for_each, parallel, stop)",
  ],
  ["a step name with a space", withStep({ name: "a b" }), "steps.0.name: must be 1-64 letters, digits, _ or -"],
  ["an unknown subject", withStep({ subject: "email.send" }), `steps.0.subject: must be one of ${SUBJECTS}`],
  [
    "a node reference that is not a node subject",
    { name: "x", steps: [{ name: "a", node: "nodes.123" }] },
    "steps.0.node: must be a node template's subject: nodes.<id>",
  ],
  [
    "a node reference with inline fields",
    { name: "x", steps: [{ name: "a", node: UNKNOWN_NODE, subject: "transform", options: {} }] },
    "steps.0.subject: is not used with node: a node reference is only name and node (and if, catch); steps.0.options: is not used with node: a node reference is only name and node (and if, catch)",
  ],
  [
    "a node reference to no node",
    { name: "x", steps: [transform("first"), { name: "a", node: UNKNOWN_NODE }] },
    `steps.1.node: no node template ${UNKNOWN_NODE} in this account`,
  ],
  ["another node type", withStep({ node_type: "agent" }), 'steps.0.node_type: must be "function"'],
  ["an unknown step field", withStep({ extra: 1 }), 'steps.0: Unrecognized key: "extra"'],
  ["a payload that is not an object", withStep({ payload: "text" }), "steps.0.payload: must be an object"],
  [
    "an unclosed template",
    withStep({ payload: { url: "{{trigger.id" } }),
    "steps.0.payload.url: unclosed template reference",
  ],
  [
    "malformed templates deep in the payload",
    withStep({ payload: { url: "{{ trigger.items[0 }}", b: ["{{nope.x}}"] } }),
    'steps.0.payload.url: invalid expression {{trigger.items[0}}: S0203: Expected "]" before end of expression at character 15; steps.0.payload.b.0: unknown template root "nope" in {{nope.x}} (trigger, steps, secrets, run, item, index, error)',
  ],
  [
    "mistakes deep inside control steps, each named by its path",
    {
      name: "x",
      steps: [
        {
          name: "route",
          switch: [
            {
              when: "{{ trigger.kind = 'a' }}",
              steps: [transform("a1"), { name: "a2", subject: "transform", payload: { u: "{{trigger.x" } }],
            },
            { when: "{{ trigger.kind = 'b' }}", steps: [transform("b1", { v: "{{ item }}" })] },
          ],
          default: [{ name: "loop", for_each: "{{ trigger.items }}", concurrency: 51, steps: [transform("a1")] }],
        },
      ],
    },
    "steps.0.switch.0.steps.1.payload.u: unclosed template reference; steps.0.default.0.concurrency: must be at most 50",
  ],
  [
    "a condition that does not parse",
    { name: "x", steps: [{ name: "route", switch: [{ when: "{{ trigger.kind = }}", steps: [transform("a")] }] }] },
    "steps.0.switch.0.when: invalid expression {{trigger.kind =}}: S0207: Unexpected end of expression at character 14",
  ],
  [
    "names and scopes across the tree",
    {
      name: "x",
      steps: [
        {
          name: "loop",
          for_each: "{{ trigger.items }}",
          steps: [transform("each", { i: "{{ index }}", all: "{{ steps.loop }}" })],
        },
        transform("after", { e: "{{ error.message }}", i: "{{ item.id }}" }),
        {
          name: "both",
          parallel: { left: [transform("each")] },
          catch: [transform("alert", { why: "{{ error.message }}" })],
        },
      ],
    },
    'steps.2.parallel.left.0.name: duplicate step name "each" (also steps.0.steps.0.name); steps.0.steps.0.payload.all: {{steps.loop}} refers to step "loop", which holds it and has not ended yet; steps.1.payload.e: {{error.message}} is only in scope inside catch and on_failure; steps.1.payload.i: {{item.id}} is only in scope inside a for_each',
  ],
  [
    "a step of two kinds, a for_each without steps, a stop with a handler",
    {
      name: "x",
      steps: [
        { name: "a", switch: [{ when: "{{true}}", steps: [transform("a1")] }], parallel: { p: [transform("p1")] } },
        { name: "b", for_each: "{{ trigger.items }}" },
        { name: "c", stop: {}, catch: [transform("c1")] },
        { name: "d", subject: "transform", if: "trigger.ok" },
      ],
    },
    "steps.0.parallel: a step is one kind: switch and parallel cannot be combined; steps.1.steps: is required with for_each; steps.2.catch: is not used with stop: a stop cannot fail; steps.3.if: must hold a template: {{ expression }}",
  ],
  [
    "a payload over 64 KiB",
    withStep({ payload: { big: "x".repeat(70_000) } }),
    "steps.0.payload: must be at most 65536 bytes as JSON",
  ],
  [
    "options out of range",
    withStep({ options: { attempts: 0, timeout: 1.5, backoff_ms: 4_000_000 } }),
    "steps.0.options.timeout: must be a whole number; steps.0.options.attempts: must be at least 1; steps.0.options.backoff_ms: must be at most 3600000",
  ],
  ["an unknown option", withStep({ options: { retries: 3 } }), 'steps.0.options: Unrecognized key: "retries"'],
  [
    "duplicate step names",
    { name: "x", steps: [transform("a"), transform("a"), transform("b"), transform("a")] },
    'steps.1.name: duplicate step name "a" (also steps.0.name); steps.3.name: duplicate step name "a" (also steps.0.name)',
  ],
  [
    "references to a later step, to itself and to no step",
    {
      name: "x",
      steps: [
        transform("a", { x: "{{steps.b.x}}", y: "{{steps.a}}", z: "{{steps.zz.q}} and {{ secrets.k }}" }),
        transform("b", { ok: "{{steps.a.y}}" }),
      ],
    },
    `steps.0.payload.x: {{steps.b.x}} refers to step "b", which runs later; ${LATER}; steps.0.payload.y: {{steps.a}} refers to its own step; ${LATER}; steps.0.payload.z: {{steps.zz.q}} refers to no step of this flow ("zz")`,
  ],
  ["another trigger type", withTrigger({ type: "cron" }), 'trigger.type: must be "webhook", "schedule" or "manual"'],
  [
    "empty and long event types",
    withTrigger({ events: ["", "x".repeat(201)] }),
    "trigger.events.0: must not be empty; trigger.events.1: must be at most 200 characters",
  ],
  [
    "101 event types",
    withTrigger({ events: Array.from({ length: 101 }, (_, i) => `e${i}`) }),
    "trigger.events: must list at most 100 event types",
  ],
  [
    "an unknown response mode",
    withTrigger({ response_mode: "later" }),
    'trigger.response_mode: Invalid option: expected one of "acknowledge"|"wait"',
  ],
  [
    "signature access without service and secret",
    withTrigger({ access: "signature" }),
    "trigger.service: is required when access is signature; trigger.signing_secret: is required when access is signature",
  ],
  [
    "a Stripe secret in another format",
    withTrigger({ access: "signature", service: "stripe", signing_secret: "sk_live" }),
    "trigger.signing_secret: must be a Stripe endpoint secret: whsec_ followed by letters and digits",
  ],
  [
    "a Standard Webhooks secret too short",
    withTrigger({ access: "signature", service: "standard", signing_secret: "whsec_abc" }),
    "trigger.signing_secret: must be a Standard Webhooks secret: whsec_ followed by 24 to 64 bytes in base64",
  ],
  [
    "a secret without signature access",
    withTrigger({ access: "public", signing_secret: "s" }),
    "trigger.signing_secret: is only used when access is signature",
  ],
  [
    "custom without hmac",
    withTrigger({ access: "signature", service: "custom", signing_secret: "s" }),
    "trigger.hmac: is required when service is custom",
  ],
  [
    "hmac for another service",
    withTrigger({
      access: "signature",
      service: "github",
      signing_secret: "s",
      hmac: { header: "X-Sig", algorithm: "sha256", encoding: "hex" },
    }),
    "trigger.hmac: is only used when service is custom",
  ],
  [
    "hmac settings that are wrong",
    withTrigger({
      access: "signature",
      service: "custom",
      signing_secret: "s",
      hmac: { header: "X Sig", algorithm: "md5", encoding: "hex" },
    }),
    'trigger.hmac.header: must be an HTTP header name; trigger.hmac.algorithm: Invalid option: expected one of "sha1"|"sha256"|"sha512"',
  ],
  [
    "an unknown service",
    withTrigger({ access: "api_key", service: "mailchimp" }),
    'trigger.service: Invalid option: expected one of "stripe"|"github"|"slack"|"shopify"|"twilio"|"standard"|"custom"',
  ],
  ["a misspelt trigger field", withTrigger({ respone_mode: "wait" }), 'trigger: Unrecognized key: "respone_mode"'],
  [
    "a delivery id field that is not a path",
    withTrigger({ delivery_id_field: "data..id" }),
    "trigger.delivery_id_field: must be a dot path of field names, e.g. data.id",
  ],
  ["a trigger that is not an object", withTrigger("webhook"), "trigger: must be an object"],
];

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`flow validation on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Record<string, string>;
    let flows: FlowsClient;
    beforeAll(async () => {
      api = await startTestApi({ backend, redis });
      owner = bearer((await signUp(api, "flow-rules")).auth.auth_token);
      flows = flowsClient(api, owner);
    }, 60_000);
    afterAll(() => api.stop());

    test("creation refuses each mistake with a 400 naming its field, and stores nothing", async () => {
      const answers: { what: string; status: number; body: unknown }[] = [];
      for (const [what, body] of CASES) {
        const response = await flows.create(body);
        answers.push({ what, status: response.status, body: refusalOf(await readBody(response)) });
      }
      expect(answers).toEqual(
        CASES.map(([what, , error]) => ({
          what,
          status: 400,
          body: { error: `invalid input: ${error}`, problems: `invalid input: ${error}` },
        })),
      );
      expect(await readBody(await flows.list())).toEqual({ data: [] });
    });

    test("a replacement is held to the same rules, and a refused one leaves the flow and its revision as they were", async () => {
      const data = await flows.created(stripeFlow());
      // An update may keep the stored secret, so only the service is missing there (flows.test.ts covers the rest).
      const updateCases = CASES.map(([what, body, error]): [string, unknown, string] =>
        what === "signature access without service and secret"
          ? [what, body, "trigger.service: is required when access is signature"]
          : [what, body, error],
      );
      for (const [what, body, error] of updateCases) {
        const response = await flows.update(data.id, body);
        expect({ what, status: response.status, body: refusalOf(await readBody(response)) }).toEqual({
          what,
          status: 400,
          body: { error: `invalid input: ${error}`, problems: `invalid input: ${error}` },
        });
      }
      expect(await readBody(await flows.get(data.id))).toEqual({ data });
    });

    test("a refusal carries each problem as data with its field's path, over REST and tRPC alike", async () => {
      const body = {
        name: "x",
        steps: [transform("a", { url: "{{ steps.b.x }}" }), transform("a")],
      };
      const saving = [
        { path: "steps.1.name", message: 'duplicate step name "a" (also steps.0.name)' },
        { path: "steps.0.payload.url", message: '{{steps.b.x}} refers to no step of this flow ("b")' },
      ];
      const rest = await flows.create(body);
      expect({ status: rest.status, body: await readBody(rest) }).toEqual({
        status: 400,
        body: {
          error:
            'invalid input: steps.1.name: duplicate step name "a" (also steps.0.name); steps.0.payload.url: {{steps.b.x}} refers to no step of this flow ("b")',
          problems: saving,
        },
      });
      const trpc = await api.request("/trpc/flows.create", { method: "POST", headers: owner, json: body });
      expect(trpc.status).toBe(400);
      expect(((await readBody(trpc)) as { error: { data: unknown } }).error.data).toMatchObject({
        domainCode: "validation_error",
        problems: saving,
      });
      // A template that does not parse is refused by the body's own rules, named the same way.
      const unclosed = { ...body, steps: [transform("c", { n: "{{ trigger.id" })] };
      const parsed = [{ path: "steps.0.payload.n", message: "unclosed template reference" }];
      expect((await readBody(await flows.create(unclosed))).problems).toEqual(parsed);
      const overTrpc = await api.request("/trpc/flows.create", { method: "POST", headers: owner, json: unclosed });
      expect(((await readBody(overTrpc)) as { error: { data: { problems: unknown } } }).error.data.problems).toEqual(
        parsed,
      );
    });

    test("a reference to a step that may not have ended is refused, naming both steps, however deep the lists", async () => {
      const refused = await flows.create({
        name: "x",
        steps: [
          transform("first"),
          {
            name: "loop",
            for_each: "{{ trigger.items }}",
            steps: [
              {
                name: "fan",
                parallel: {
                  left: [transform("l1"), transform("l2", { fine: "{{ steps.l1 }} {{ steps.first }} {{ item }}" })],
                  right: [transform("r1", { x: "{{ steps.l1.n }}" })],
                },
              },
              transform("after_fan", { x: "{{ steps.l2 }}", fine: "{{ steps.fan.left }}" }),
            ],
          },
          {
            name: "both",
            parallel: {
              a: [transform("a1")],
              b: [
                {
                  name: "route",
                  switch: [{ when: "{{ steps.a1 }}", steps: [transform("c1", { fine: "{{ steps.loop }}" })] }],
                  default: [transform("d1", { x: "{{ $count(steps.c1) }}" })],
                },
              ],
            },
          },
          transform("end", { x: "{{ steps.c1 }}", fine: "{{ steps.both.b }}" }),
          { ...transform("lookup"), catch: [transform("fb", { x: "{{ steps.lookup }}", fine: "{{ steps.end }}" })] },
          transform("later", { x: "{{ steps.fb }}" }),
        ],
        on_failure: [transform("alert", { x: "{{ steps.first }}" })],
      });
      expect(refused.status).toBe(400);
      const whole = (name: string) => `the steps after "${name}" read it as a whole ({{steps.${name}}})`;
      expect(((await readBody(refused)) as { error: string }).error.split("; ")).toEqual([
        'invalid input: steps.1.steps.0.parallel.right.0.payload.x: {{steps.l1.n}} refers to step "l1" in parallel.left of "fan", which step "r1" in parallel.right cannot see: the branches of a parallel run at once',
        `steps.1.steps.1.payload.x: {{steps.l2}} refers to step "l2" inside "fan", which step "after_fan" cannot see: ${whole("fan")}`,
        'steps.2.parallel.b.0.switch.0.when: {{steps.a1}} refers to step "a1" in parallel.a of "both", which step "route" in parallel.b cannot see: the branches of a parallel run at once',
        'steps.2.parallel.b.0.default.0.payload.x: {{steps.c1}} refers to step "c1" in switch.0.steps of "route", which step "d1" in default cannot see: a switch runs one of its lists',
        `steps.3.payload.x: {{steps.c1}} refers to step "c1" inside "both", which step "end" cannot see: ${whole("both")}`,
        'steps.4.catch.0.payload.x: {{steps.lookup}} refers to step "lookup", which holds it and has not ended yet',
        `steps.5.payload.x: {{steps.fb}} refers to step "fb" inside "lookup", which step "later" cannot see: ${whole("lookup")}`,
        'on_failure.0.payload.x: {{steps.first}} refers to step "first", which step "alert" of on_failure cannot see: a run may fail before any step ends ({{error.step}} names the step that failed)',
      ]);
    });

    test("a node template's own references are checked where the flow uses it", async () => {
      const node = await createNode(api, owner, { subject: "transform", payload: { body: "{{steps.fetch.body}}" } });
      const early = await flows.create({ name: "x", steps: [{ name: "use", node }, transform("fetch")] });
      expect(early.status).toBe(400);
      // The problem is the node reference's; its message names the node's field.
      const message = `${node} payload.body: {{steps.fetch.body}} refers to step "fetch", which runs later; ${LATER}`;
      expect(await readBody(early)).toEqual({
        error: `invalid input: steps.0.node: ${message}`,
        problems: [{ path: "steps.0.node", message }],
      });
      const inOrder = await flows.created({ name: "x", steps: [transform("fetch"), { name: "use", node }] });
      expect(inOrder.steps[1]).toEqual({ name: "use", node });
    });

    test("a node reference is matched whatever the case of its id", async () => {
      const node = await createNode(api, owner, { subject: "transform" });
      const data = await flows.created({
        name: "x",
        steps: [{ name: "a", node: node.toUpperCase().replace("NODES.", "nodes.") }],
      });
      expect(data.steps).toEqual([{ name: "a", node }]);
    });

    test("ids are UUIDs (400) and a missing flow is 404 flow not found; webhook urls default to PUBLIC_URL/webhooks", async () => {
      for (const path of ["/flows/nope", "/flows/nope/webhook/regenerate"]) {
        const response = await api.request(path, {
          method: path.endsWith("regenerate") ? "POST" : "GET",
          headers: owner,
        });
        expect({ path, status: response.status, body: await readBody(response) }).toEqual({
          path,
          status: 400,
          body: { error: "invalid input: id: must be a UUID", problems: [{ path: "id", message: "must be a UUID" }] },
        });
      }
      const missing = await flows.get("00000000-0000-4000-8000-000000000001");
      expect({ status: missing.status, body: await readBody(missing) }).toEqual({
        status: 404,
        body: { error: "flow not found" },
      });
      const data = await flows.created(minimalFlow());
      expect(data.webhook.url).toBe(`http://localhost:3000/webhooks/${data.webhook.id}`);
    });
  });
}

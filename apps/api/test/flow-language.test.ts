import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger, platformJobs } from "@platform/core";
import { type Caller, call, newCaller, planLimitsFile, putOnPlan, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * The flow language through the HTTP API, as a user writes it: expressions, `if`, `switch`,
 * `for_each`, `parallel`, `catch`, `on_failure` and `stop`, nested, with what `GET /runs/{id}`
 * shows of the path a run took.
 */

const task = (name: string, payload: unknown = {}, extra: Record<string, unknown> = {}) => ({
  name,
  subject: "transform",
  payload,
  ...extra,
});

/** A step that fails for good: a bucket that does not exist. */
const failing = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  subject: "kv.get",
  payload: { bucket: "no-such-bucket", key: "k" },
  ...extra,
});

/** Bytes of events the `few-events` plan lets an account keep: three of the events the quota test sends. */
const EVENT_BYTES = 300;

// biome-ignore lint/suspicious/noExplicitAny: the assertions that read a view are its type check
type View = any;

/** The view's steps by record: `name` or `name[i]` inside a for-each. */
const byKey = (run: View) =>
  Object.fromEntries(
    run.steps.map((step: View) => [step.item ? `${step.name}[${step.item.join("][")}]` : step.name, step]),
  );

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`the flow language on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    beforeAll(async () => {
      api = await startTestApi({
        backend,
        redis,
        worker: true,
        env: { PLAN_LIMITS_FILE: planLimitsFile({ "few-events": { event_bytes: EVENT_BYTES } }) },
      });
      owner = await newCaller(api, "language");
    }, 60_000);
    afterAll(() => api.stop());

    async function flowOf(body: Record<string, unknown>): Promise<string> {
      const created = await call(api, owner, "POST", "/flows", { name: "language", ...body });
      if (created.status !== 200) throw new Error(`POST /flows: ${created.status} ${JSON.stringify(created.body)}`);
      return created.body.data.id;
    }

    async function ran(flowId: string, trigger: unknown): Promise<View> {
      const started = await startRun(api, owner, flowId, trigger);
      expect(started.status).toBe(200);
      return runUntil(api, owner, started.body.run_id);
    }

    test("expressions compute, compare, filter and map; a plain path keeps its meaning; `run` names the run", async () => {
      const flowId = await flowOf({
        steps: [
          task("order", {
            big: "{{trigger.body.amount > 100}}",
            total: "{{$sum(trigger.body.items.price)}}",
            in_stock: "{{trigger.body.items[qty > 0].sku}}",
            // JSONata answers a single match as the value; `[]` keeps it an array.
            in_stock_list: "{{trigger.body.items[qty > 0].sku[]}}",
            label: "{{ $uppercase(trigger.body.customer) }} ordered {{ $count(trigger.body.items) }} items",
            first: "{{trigger.body.items.0.sku}}",
            run: "{{run.id}}",
            flow: "{{run.flow_id}}",
          }),
        ],
      });
      const run = await ran(flowId, {
        body: {
          amount: 140,
          customer: "ada",
          items: [
            { sku: "a", qty: 2, price: 10 },
            { sku: "b", qty: 0, price: 5.5 },
          ],
        },
      });
      expect(run.status).toBe("succeeded");
      expect(run.output).toEqual({
        big: true,
        total: 15.5,
        in_stock: "a",
        in_stock_list: ["a"],
        label: "ADA ordered 2 items",
        first: "a",
        run: run.id,
        flow: flowId,
      });
    });

    test("`if` skips a step whose condition is false: recorded skipped, output null; the run goes on", async () => {
      const flowId = await flowOf({
        steps: [
          task("large", { tier: "large" }, { if: "{{trigger.amount > 100}}" }),
          task("small", { tier: "small" }, { if: "{{trigger.amount <= 100}}" }),
          task("summary", { large: "{{steps.large.tier}}", small: "{{steps.small.tier}}" }),
        ],
      });
      const run = await ran(flowId, { amount: 250 });
      expect(run.status).toBe("succeeded");
      expect(run.steps.map((step: View) => [step.name, step.status, step.output])).toEqual([
        ["large", "succeeded", { tier: "large" }],
        ["small", "skipped", null],
        ["summary", "succeeded", { large: "large", small: null }],
      ]);
    });

    test("a switch runs the first case whose `when` holds, else its default; its output is that list's last output", async () => {
      const flowId = await flowOf({
        steps: [
          {
            name: "route",
            switch: [
              { when: "{{trigger.type = 'refund'}}", steps: [task("refund", { kind: "refund" })] },
              {
                when: "{{$contains(trigger.type, 'payment')}}",
                steps: [task("pay", { kind: "payment" }), task("pay_note", { note: "paid {{steps.pay.kind}}" })],
              },
            ],
            default: [task("other", { kind: "other: {{trigger.type}}" })],
          },
          task("after", { routed: "{{steps.route}}" }),
        ],
      });
      const payment = await ran(flowId, { type: "payment_intent.succeeded" });
      expect(payment.status).toBe("succeeded");
      expect(payment.output).toEqual({ routed: { note: "paid payment" } });
      const steps = byKey(payment);
      expect(steps.route).toMatchObject({ status: "succeeded", case: 1, output: { note: "paid payment" } });
      expect(steps.pay).toMatchObject({ parent: "route", status: "succeeded" });
      expect(steps.refund).toBeUndefined();
      expect(payment.steps.map((step: View) => step.name)).toEqual(["route", "pay", "pay_note", "after"]);

      const other = await ran(flowId, { type: "customer.created" });
      expect(byKey(other).route).toMatchObject({ case: "default", output: { kind: "other: customer.created" } });
    });

    test("a for-each runs its steps per item, `concurrency` at a time; its output is each item's last output in order", async () => {
      expect((await call(api, owner, "PUT", "/storage/kv/lines", { description: "" })).status).toBe(200);
      const flowId = await flowOf({
        steps: [
          {
            name: "lines",
            for_each: "{{trigger.items}}",
            concurrency: 3,
            steps: [
              task("price", { sku: "{{item.sku}}", at: "{{index}}", cents: "{{item.price * 100}}" }),
              {
                name: "save",
                subject: "kv.put",
                payload: { bucket: "lines", key: "{{trigger.order}}-{{index}}", value: "{{steps.price}}" },
              },
              task("line", { sku: "{{steps.price.sku}}", cents: "{{steps.price.cents}}" }),
            ],
          },
          task("total", { cents: "{{$sum(steps.lines.cents)}}", count: "{{$count(steps.lines)}}" }),
        ],
      });
      const items = Array.from({ length: 7 }, (_, index) => ({ sku: `s${index}`, price: index + 0.5 }));
      const run = await ran(flowId, { order: "o1", items });
      expect(run.status).toBe("succeeded");
      const steps = byKey(run);
      expect(steps.lines).toMatchObject({ status: "succeeded", items: 7 });
      expect(steps.lines.output).toEqual(items.map((item) => ({ sku: item.sku, cents: item.price * 100 })));
      expect(run.output).toEqual({ cents: items.reduce((sum, item) => sum + item.price * 100, 0), count: 7 });
      expect(steps["price[4]"]).toMatchObject({ parent: "lines", item: [4], output: { sku: "s4", at: 4, cents: 450 } });
      // Item by item in the view: each item's steps together.
      expect(run.steps.slice(0, 7).map((step: View) => [step.name, step.item])).toEqual([
        ["lines", undefined],
        ["price", [0]],
        ["save", [0]],
        ["line", [0]],
        ["price", [1]],
        ["save", [1]],
        ["line", [1]],
      ]);
      const saved = await call(api, owner, "GET", "/storage/kv/lines/keys/o1-6");
      expect(saved.body.value).toEqual({ sku: "s6", at: 6, cents: 650 });
    });

    test("a long for-each's items are shown 100 at a time (`items_from`); an empty or missing array iterates nothing", async () => {
      const flowId = await flowOf({
        steps: [{ name: "each", for_each: "{{trigger.items}}", steps: [task("double", { v: "{{item * 2}}" })] }],
      });
      const run = await ran(flowId, { items: Array.from({ length: 130 }, (_, index) => index) });
      expect(run.status).toBe("succeeded");
      expect(run.output).toHaveLength(130);
      expect(run.output[129]).toEqual({ v: 258 });
      expect(run.steps.filter((step: View) => step.name === "double")).toHaveLength(100);
      const rest = await call(api, owner, "GET", `/runs/${run.id}?items_from=100`);
      const doubles = rest.body.steps.filter((step: View) => step.name === "double");
      expect(doubles.map((step: View) => step.item[0])).toEqual(Array.from({ length: 30 }, (_, index) => 100 + index));

      const none = await ran(flowId, {});
      expect(none).toMatchObject({ status: "succeeded", output: [] });
      const notArray = await ran(flowId, { items: { a: 1 } });
      expect(notArray.status).toBe("failed");
      expect(notArray.error).toBe('step "each" failed: for_each: the value is an object, not an array');
    });

    test("parallel branches all run; the output is an object of each branch's last output", async () => {
      const flowId = await flowOf({
        steps: [
          {
            name: "fan",
            parallel: {
              left: [task("l1", { n: "{{trigger.n + 1}}" }), task("l2", { n: "{{steps.l1.n * 10}}" })],
              right: [task("r1", { n: "{{trigger.n - 1}}" })],
            },
          },
        ],
      });
      const run = await ran(flowId, { n: 5 });
      expect(run).toMatchObject({ status: "succeeded", output: { left: { n: 60 }, right: { n: 4 } } });
      expect(byKey(run).l2).toMatchObject({ parent: "fan", status: "succeeded" });
    });

    test("a failing branch fails the parallel step once the other branches have ended", async () => {
      const flowId = await flowOf({
        steps: [
          {
            name: "fan",
            parallel: { bad: [failing("boom")], good: [task("g1", { ok: true }), task("g2", { ok: 2 })] },
          },
          task("never"),
        ],
      });
      const run = await ran(flowId, {});
      expect(run.status).toBe("failed");
      expect(run.error).toBe('step "boom" failed: bucket not found');
      const steps = byKey(run);
      expect(steps.g2).toMatchObject({ status: "succeeded" });
      expect(steps.fan).toMatchObject({ status: "failed", failed_step: "boom" });
      expect(steps.never).toBeUndefined();
    });

    test("`catch` handles a failure after its retries: the handler's output replaces the step's and the run goes on", async () => {
      const flowId = await flowOf({
        steps: [
          failing("lookup", {
            catch: [task("fallback", { used: "fallback", why: "{{error.message}}", where: "{{error.step}}" })],
          }),
          task("after", { got: "{{steps.lookup.used}}" }),
        ],
      });
      const run = await ran(flowId, {});
      expect(run.status).toBe("succeeded");
      expect(run.output).toEqual({ got: "fallback" });
      const steps = byKey(run);
      expect(steps.lookup).toMatchObject({
        status: "succeeded",
        handled: true,
        error: "bucket not found",
        output: { used: "fallback", why: "bucket not found", where: "lookup" },
      });
      expect(steps.fallback).toMatchObject({ parent: "lookup", status: "succeeded" });
    });

    test("without a handler the run fails as before, and the flow's on_failure steps run once, with the error", async () => {
      expect((await call(api, owner, "PUT", "/storage/kv/alerts", { description: "" })).status).toBe(200);
      const flowId = await flowOf({
        steps: [task("first", { ok: true }), failing("broken"), task("never")],
        on_failure: [
          {
            name: "alert",
            subject: "kv.put",
            payload: {
              bucket: "alerts",
              key: "{{run.id}}",
              value: { step: "{{error.step}}", why: "{{error.message}}" },
            },
          },
        ],
      });
      const run = await ran(flowId, {});
      expect(run.status).toBe("failed");
      expect(run.error).toBe('step "broken" failed: bucket not found');
      expect(byKey(run).alert).toMatchObject({ status: "succeeded" });
      const alert = await call(api, owner, "GET", `/storage/kv/alerts/keys/${run.id}`);
      expect(alert.body.value).toEqual({ step: "broken", why: "bucket not found" });

      const fine = await ran(await flowOf({ steps: [task("ok")], on_failure: [task("unused")] }), {});
      expect(fine.status).toBe("succeeded");
      expect(byKey(fine).unused).toBeUndefined();
    });

    test("`stop` ends the run succeeded with its output; in wait mode its response is the answer", async () => {
      const flowId = await flowOf({
        steps: [
          task("check", { known: "{{trigger.id != null}}" }),
          {
            name: "unknown",
            if: "{{$not(steps.check.known)}}",
            stop: { output: { ignored: true }, response: { status: 422, body: { error: "id is required" } } },
          },
          task("process", { id: "{{trigger.id}}" }),
        ],
      });
      const stopped = await ran(flowId, {});
      expect(stopped).toMatchObject({ status: "succeeded", output: { ignored: true } });
      expect(byKey(stopped).unknown).toMatchObject({ stopped: true });
      expect(byKey(stopped).process).toBeUndefined();

      const answer = await api.request(`/flows/${flowId}/runs?wait=true`, {
        method: "POST",
        headers: { ...owner.headers, "content-type": "application/json" },
        body: "{}",
      });
      expect(answer.status).toBe(422);
      expect(await answer.json()).toEqual({ error: "id is required" });

      const through = await ran(flowId, { id: 9 });
      expect(through).toMatchObject({ status: "succeeded", output: { id: 9 } });
    });

    test("constructs nest: a for-each inside a switch case inside a parallel branch", async () => {
      const flowId = await flowOf({
        steps: [
          {
            name: "fan",
            parallel: {
              orders: [
                {
                  name: "by_kind",
                  switch: [
                    {
                      when: "{{trigger.kind = 'bulk'}}",
                      steps: [
                        {
                          name: "each",
                          for_each: "{{trigger.orders}}",
                          concurrency: 2,
                          steps: [task("line", { v: "{{item.id & ':' & index}}" }, { if: "{{item.id != 'skip'}}" })],
                        },
                      ],
                    },
                  ],
                  default: [task("single", { v: "one" })],
                },
              ],
              audit: [task("note", { v: "{{$count(trigger.orders)}} orders" })],
            },
          },
        ],
      });
      const run = await ran(flowId, { kind: "bulk", orders: [{ id: "a" }, { id: "skip" }, { id: "c" }] });
      expect(run.status).toBe("succeeded");
      expect(run.output).toEqual({ orders: [{ v: "a:0" }, null, { v: "c:2" }], audit: { v: "3 orders" } });
      const steps = byKey(run);
      expect(steps.by_kind).toMatchObject({ parent: "fan", case: 0 });
      expect(steps.each).toMatchObject({ parent: "by_kind", items: 3 });
      expect(steps["line[1]"]).toMatchObject({ status: "skipped", parent: "each", item: [1] });
      expect(steps["line[2]"]).toMatchObject({ status: "succeeded", output: { v: "c:2" } });
    });

    test("a step sees only the steps that ended before it, however it names them: each list runs on its own view", async () => {
      // What a step sees of `steps`, by name; `$lookup` and `$$` are not checked when the flow is saved.
      const SEES = "{{ [$sort($keys($$.steps))] }}";
      const flowId = await flowOf({
        steps: [
          task("first", { seen: SEES }),
          {
            name: "loop",
            for_each: "{{trigger.items}}",
            concurrency: 2,
            steps: [
              {
                name: "fan",
                parallel: {
                  left: [task("l1", { seen: SEES })],
                  // l1 has ended by the time r2 starts: still, it is in another branch.
                  right: [
                    { name: "pause", subject: "delay", payload: { ms: 50 } },
                    task("r2", { seen: SEES, l1: "{{ $lookup($$.steps, 'l1') }}" }),
                  ],
                },
              },
              task("after_fan", { seen: SEES, left: "{{steps.fan.left.seen}}" }),
            ],
          },
          {
            name: "route",
            switch: [{ when: "{{ $count(steps.loop) = 2 }}", steps: [task("c1", { seen: SEES })] }],
            default: [task("d1")],
          },
          failing("lookup", { catch: [task("fb", { seen: SEES })] }),
          task("end", { seen: SEES, c1: "{{ $lookup($$.steps, 'c1') }}", fb: "{{ $$.steps.fb }}" }),
        ],
      });
      const run = await ran(flowId, { items: [1, 2] });
      expect(run.status).toBe("succeeded");
      const steps = byKey(run);
      expect(steps.first.output).toEqual({ seen: [] });
      for (const item of [0, 1]) {
        expect(steps[`l1[${item}]`].output).toEqual({ seen: ["first"] });
        expect(steps[`r2[${item}]`].output).toEqual({ seen: ["first", "pause"], l1: null });
        // After the parallel, its steps are read through it.
        expect(steps[`after_fan[${item}]`].output).toEqual({ seen: ["fan", "first"], left: ["first"] });
      }
      expect(steps.c1.output).toEqual({ seen: ["first", "loop"] });
      expect(steps.fb.output).toEqual({ seen: ["first", "loop", "route"] });
      expect(run.output).toEqual({ seen: ["first", "lookup", "loop", "route"], c1: null, fb: null });

      // A run may fail at any step: on_failure sees none of them, and error.step says which.
      const failed = await ran(
        await flowOf({
          steps: [task("before"), failing("broken")],
          on_failure: [task("alert", { seen: SEES, step: "{{error.step}}" })],
        }),
        {},
      );
      expect(failed.status).toBe("failed");
      expect(byKey(failed).alert.output).toEqual({ seen: [], step: "broken" });
    });

    test("an expression past its budget fails its step with a clear error, without retries", async () => {
      const flowId = await flowOf({
        steps: [
          {
            name: "huge",
            subject: "transform",
            payload: { n: "{{ $count([1..10000000]) }}" },
            options: { attempts: 3, backoff_ms: 10, timeout: 1000 },
          },
        ],
      });
      const run = await ran(flowId, {});
      expect(run.status).toBe("failed");
      expect(run.steps[0].attempts).toHaveLength(1);
      expect(run.error).toStartWith('step "huge" failed: D2015: The maximum sequence length');
    });

    test("no error text holds a secret's value, whatever expression failed: each says [secret:<key>]", async () => {
      const value = "s3cr3t-t0k3n/value";
      expect((await call(api, owner, "PUT", "/secrets/tok", { value })).status).toBe(200);
      const leak = "{{$error(secrets.tok)}}";
      const cases: [string, Record<string, unknown>, string][] = [
        ["for_each", { name: "f", for_each: leak, steps: [task("t")] }, 'step "f" failed: for_each: '],
        ["switch", { name: "s", switch: [{ when: leak, steps: [task("t")] }] }, 'step "s" failed: switch: '],
        ["transform", task("t", { v: leak }), 'step "t" failed: '],
        ["if", task("t", {}, { if: leak }), 'step "t" failed: if: '],
        ["stop", { name: "s", stop: { output: { v: leak } } }, 'step "s" failed: stop: '],
      ];
      for (const [kind, step, prefix] of cases) {
        const run = await ran(await flowOf({ steps: [step] }), {});
        expect({ kind, status: run.status, leaked: JSON.stringify(run).includes(value) }).toEqual({
          kind,
          status: "failed",
          leaked: false,
        });
        expect(run.error).toStartWith(prefix);
        expect(run.error).toContain("[secret:tok]");
      }
      // A handler sees the error as the run records it: its output holds no value either.
      const handled = await ran(
        await flowOf({
          steps: [
            { name: "f", for_each: leak, steps: [task("t")], catch: [task("why", { why: "{{error.message}}" })] },
          ],
        }),
        {},
      );
      expect(handled.status).toBe("succeeded");
      expect(handled.output).toEqual({ why: "for_each: D3137: [secret:tok] at character 7" });
      expect(JSON.stringify(handled)).not.toContain(value);
    });

    test("wait.event parks the run until an event of its key arrives (POST /events); its output is the event's data", async () => {
      const flowId = await flowOf({
        steps: [
          task("ask", { approve_with: "approval-{{trigger.order}}" }),
          {
            name: "approval",
            subject: "wait.event",
            payload: { key: "approval-{{trigger.order}}", timeout_ms: 600_000 },
          },
          task("decide", { approved: "{{steps.approval.approved}}", by: "{{steps.approval.by}}" }),
        ],
      });
      const ids = await Promise.all(
        [1, 2, 3].map(async (order) => (await startRun(api, owner, flowId, { order })).body.run_id as string),
      );
      // Each parks, waiting; none holds a worker.
      for (const id of ids) {
        // (The view reads the run's row and its steps in two queries: wait until both say it parked.)
        const waiting = await runUntil(
          api,
          owner,
          id,
          (run) => run.status === "running" && byKey(run).approval?.status === "waiting",
        );
        expect(waiting.status).toBe("running");
        expect(byKey(waiting).approval).toMatchObject({ wait: { key: expect.stringMatching(/^approval-/) } });
      }
      // An event nobody waits for resumes nothing; one for order 2 resumes that run only.
      expect(await call(api, owner, "POST", "/events", { key: "approval-99", data: {} })).toMatchObject({
        status: 200,
        body: { data: { resumed: 0 } },
      });
      const sent = await call(api, owner, "POST", "/events", {
        key: "approval-2",
        data: { approved: true, by: "ada" },
      });
      expect(sent).toMatchObject({ status: 200, body: { data: { resumed: 1 } } });
      const second = await runUntil(api, owner, ids[1] as string);
      expect(second).toMatchObject({ status: "succeeded", output: { approved: true, by: "ada" } });
      expect((await call(api, owner, "GET", `/runs/${ids[0]}`)).body.status).toBe("running");

      // Another account's event of the same key reaches none of these runs.
      const stranger = await newCaller(api, "stranger");
      expect((await call(api, stranger, "POST", "/events", { key: "approval-1", data: {} })).body).toEqual({
        data: { resumed: 0 },
      });
      // An event.send step of another flow delivers too.
      const approver = await flowOf({
        steps: [
          {
            name: "send",
            subject: "event.send",
            payload: { key: "approval-{{trigger.order}}", data: { approved: false, by: "bot" } },
          },
        ],
      });
      const sender = await ran(approver, { order: 1 });
      expect(sender).toMatchObject({ status: "succeeded", output: { resumed: 1 } });
      expect(await runUntil(api, owner, ids[0] as string)).toMatchObject({
        status: "succeeded",
        output: { approved: false, by: "bot" },
      });
      expect(await call(api, owner, "POST", "/events", { key: "" })).toMatchObject({ status: 400 });
    });

    test("events count against the plan's event_bytes: past it POST /events is 413 and event.send fails, naming it; retention gives the bytes back", async () => {
      const sender = await newCaller(api, "few-events");
      await putOnPlan(api, sender, "few-events");
      const usedOf = async (caller: Caller) =>
        (await call(api, caller, "GET", "/accounts/usage")).body.data.limits.find(
          (limit: { name: string }) => limit.name === "event_bytes",
        );
      // An event counts its key and its data as JSON: "quota-1" and {"note":"<80 x>"} are 7 + 91 bytes.
      const data = { note: "x".repeat(80) };
      for (const key of ["quota-1", "quota-2", "quota-3"]) {
        expect((await call(api, sender, "POST", "/events", { key, data })).status).toBe(200);
      }
      expect(await usedOf(sender)).toEqual({
        name: "event_bytes",
        limit: EVENT_BYTES,
        used: 294,
        unit: "bytes",
        per: "account",
      });
      const refusal = `the account keeps 294 of the ${EVENT_BYTES} bytes the few-events plan allows (event_bytes); this write does not fit`;
      expect(await call(api, sender, "POST", "/events", { key: "quota-4", data })).toMatchObject({
        status: 413,
        body: { error: refusal, limit: { name: "event_bytes", limit: EVENT_BYTES, used: 294, plan: "few-events" } },
      });
      // A step that sends one fails, not retried, with the same words; the event is not kept.
      const created = await call(api, sender, "POST", "/flows", {
        name: "sender",
        steps: [{ name: "send", subject: "event.send", payload: { key: "quota-5", data }, options: { attempts: 3 } }],
      });
      const started = await startRun(api, sender, created.body.data.id, {});
      const run = await runUntil(api, sender, started.body.run_id);
      expect(run).toMatchObject({ status: "failed", error: `step "send" failed: ${refusal}` });
      expect(run.steps[0].attempts).toHaveLength(1);
      expect((await usedOf(sender)).used).toBe(294);
      // Another account is not touched by this one's events.
      expect((await call(api, owner, "POST", "/events", { key: "quota-1", data })).status).toBe(200);

      // Past the longest wait, retention deletes the events and gives their bytes back.
      await api.services.db
        .updateTable("run_events")
        .set({ created_at: new Date(Date.now() - 32 * 86_400_000) })
        .where("account_id", "=", sender.accountId)
        .execute();
      const retention = platformJobs(api.services).find((job) => job.name === "run-retention");
      await retention?.run({
        signal: new AbortController().signal,
        logger: createLogger({ level: "silent", name: "t" }),
      });
      expect((await usedOf(sender)).used).toBe(0);
      expect((await call(api, sender, "POST", "/events", { key: "quota-4", data })).status).toBe(200);
      expect((await usedOf(sender)).used).toBe(98);
    });

    test("a wait that times out fails the step, or goes on with null (on_timeout: continue)", async () => {
      const flowId = await flowOf({
        steps: [
          {
            name: "strict",
            subject: "wait.event",
            payload: { key: "never-{{run.id}}", timeout_ms: 200 },
            if: "{{trigger.strict}}",
          },
          {
            name: "lenient",
            subject: "wait.event",
            payload: { key: "never-{{run.id}}", timeout_ms: 200, on_timeout: "continue" },
            if: "{{$not(trigger.strict)}}",
          },
          task("after", { got: "{{steps.lenient}}" }),
        ],
      });
      const lenient = await ran(flowId, { strict: false });
      expect(lenient).toMatchObject({ status: "succeeded", output: { got: null } });
      const strict = await ran(flowId, { strict: true });
      expect(strict.status).toBe("failed");
      expect(strict.error).toStartWith('step "strict" failed: no event "never-');
    });

    test("flow.call runs another flow of the account, waits for it holding no worker, and outputs its output", async () => {
      const child = await flowOf({
        steps: [
          { name: "pause", subject: "delay", payload: { ms: 300 } },
          task("double", { n: "{{trigger.n * 2}}", parent_gave: "{{trigger}}" }),
        ],
      });
      const failingChild = await flowOf({ steps: [failing("broken")] });
      const parent = await flowOf({
        steps: [
          { name: "call", subject: "flow.call", payload: { flow_id: child, input: { n: "{{trigger.n}}" } } },
          task("after", { doubled: "{{steps.call.n}}" }),
          {
            name: "bad",
            subject: "flow.call",
            payload: { flow_id: failingChild },
            catch: [task("recovered", { why: "{{error.message}}" })],
          },
        ],
      });
      const run = await ran(parent, { n: 21 });
      expect(run.status).toBe("succeeded");
      expect(byKey(run).after.output).toEqual({ doubled: 42 });
      const childId = byKey(run).call.child_run_id;
      const childRun = (await call(api, owner, "GET", `/runs/${childId}`)).body;
      expect(childRun).toMatchObject({
        flow_id: child,
        parent_run_id: run.id,
        status: "succeeded",
        trigger: { n: 21 },
      });
      expect(byKey(run).bad).toMatchObject({ handled: true, output: { why: expect.stringContaining("failed") } });
      expect(run.output).toEqual({ why: expect.stringMatching(/^the called run .* failed: step "broken" failed/) });

      const unknown = await ran(
        await flowOf({ steps: [{ name: "c", subject: "flow.call", payload: { flow_id: crypto.randomUUID() } }] }),
        {},
      );
      expect(unknown.error).toBe('step "c" failed: flow.call: flow not found');
    });

    test("flow.call cycles are bounded by FLOW_CALL_MAX_DEPTH", async () => {
      // A flow that calls itself, decrementing: 3 deep succeeds; forever stops at the limit (10).
      const created = await call(api, owner, "POST", "/flows", {
        name: "recursive",
        steps: [task("placeholder")],
      });
      const self = created.body.data.id;
      const updated = await call(api, owner, "PUT", `/flows/${self}`, {
        name: "recursive",
        steps: [
          {
            name: "deeper",
            subject: "flow.call",
            payload: { flow_id: self, input: { left: "{{trigger.left - 1}}" } },
            if: "{{trigger.left > 0}}",
          },
          task("depth", { left: "{{trigger.left}}" }),
        ],
      });
      expect(updated.status).toBe(200);
      expect(await ran(self, { left: 3 })).toMatchObject({ status: "succeeded", output: { left: 3 } });
      const forever = await ran(self, { left: 1000 });
      expect(forever.status).toBe("failed");
      expect(forever.error).toContain("flow.call: calls nest at most 10 deep (FLOW_CALL_MAX_DEPTH)");
    }, 60_000);

    test("a replay runs the revision its original ran, not the flow's current one", async () => {
      const flowId = await flowOf({ steps: [task("v", { version: 1 })] });
      const original = await ran(flowId, {});
      const updated = await call(api, owner, "PUT", `/flows/${flowId}`, {
        name: "language",
        steps: [task("v", { version: 2 })],
      });
      expect(updated.status).toBe(200);
      const replayed = await call(api, owner, "POST", `/runs/${original.id}/replay`);
      const replay = await runUntil(api, owner, replayed.body.run_id);
      expect(replay).toMatchObject({ revision: 1, output: { version: 1 }, replay_of: original.id });
      expect(await ran(flowId, {})).toMatchObject({ revision: 2, output: { version: 2 } });
    });
  });
}

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
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
      api = await startTestApi({ backend, redis, worker: true });
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
  });
}

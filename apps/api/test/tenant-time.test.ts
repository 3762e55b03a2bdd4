import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Caller, call, newCaller, runUntil, startRun } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Tenants isolated in time: what one account's flows compute (an expression that builds a
 * huge string, one that computes for as long as it may, a regular expression that backtracks
 * exponentially elsewhere, a definition too large to parse at once) neither answers late to
 * its own caller nor holds the process another account's runs and webhooks share. The API and
 * the worker run in one process here, as in embedded mode, so a held event loop shows in both.
 */

/** How much later than alone another account's runs may answer while an attack goes on. */
const TOLERANCE_MS = 100;
const SAMPLES = 12;
const ATTACK_PAUSE_MS = 100;

const p99 = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? 0;
};

/** A flow whose one transform step computes `expression`. */
const computing = (expression: string, steps = 1) => ({
  name: "attack",
  steps: Array.from({ length: steps }, (_, index) => ({
    name: `t${index}`,
    subject: "transform",
    payload: { v: `{{${expression}}}` },
    options: { attempts: 3, backoff_ms: 10 },
  })),
});

for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`tenants isolated in time on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let attacker: Caller;
    let victim: Caller;
    let victimFlow: string;
    let alone: number;

    /** Wait-mode runs of the victim's one-step flow, one after another, and `/healthz` between them: their latencies. */
    async function victimLatencies(count = SAMPLES): Promise<number[]> {
      const latencies: number[] = [];
      for (let index = 0; index < count; index++) {
        const started = performance.now();
        const answer = await api.request(`/flows/${victimFlow}/runs?wait=true`, {
          method: "POST",
          headers: victim.headers,
          json: { n: index },
        });
        expect(answer.status).toBe(200);
        expect(await answer.json()).toEqual({ n: index });
        const health = await api.request("/healthz");
        expect(health.status).toBe(200);
        latencies.push(performance.now() - started);
      }
      return latencies;
    }

    /**
     * The victim's p99 while `attack` runs again and again (paced, as a sender within its plan's
     * rate is: what is measured is what one attack holds, not how many there are), checked
     * against its p99 alone.
     */
    async function victimDuring(attack: () => Promise<unknown>): Promise<void> {
      let attacking = true;
      const attacks = (async () => {
        while (attacking) {
          await attack();
          await Bun.sleep(ATTACK_PAUSE_MS);
        }
      })();
      await Bun.sleep(50);
      const during = await victimLatencies();
      attacking = false;
      await attacks;
      expect(p99(during)).toBeLessThan(alone + TOLERANCE_MS);
    }

    async function attackFlow(body: Record<string, unknown>): Promise<string> {
      const created = await call(api, attacker, "POST", "/flows", body);
      expect(created.status).toBe(200);
      return created.body.data.id;
    }

    beforeAll(async () => {
      api = await startTestApi({ backend, redis, worker: true });
      attacker = await newCaller(api, "attacker");
      victim = await newCaller(api, "victim");
      const created = await call(api, victim, "POST", "/flows", {
        name: "echo",
        steps: [{ name: "echo", subject: "transform", payload: { n: "{{trigger.n}}" } }],
      });
      victimFlow = created.body.data.id;
      await victimLatencies(4); // warm
      alone = p99(await victimLatencies());
    }, 60_000);
    afterAll(() => api.stop());

    test("an expression building a 100 MB string fails its step at once, naming the limit, without retries", async () => {
      const flowId = await attackFlow(computing("$length($pad('', 1e8))"));
      const started = await startRun(api, attacker, flowId, {});
      const run = await runUntil(api, attacker, started.body.run_id);
      expect(run.status).toBe("failed");
      expect(run.steps[0].attempts).toHaveLength(1);
      expect(run.error).toContain(
        "the expression made a string of 100,000,000 characters or items; the limit is 262,144",
      );
      await victimDuring(() => startRun(api, attacker, flowId, {}, "?wait=true"));
    });

    test("an expression computing for as long as it may gives the process back between slices", async () => {
      const flowId = await attackFlow(computing("($loop := function($n) { $n > 1e9 ? $n : $loop($n + 1) }; $loop(0))"));
      const started = await startRun(api, attacker, flowId, {});
      const run = await runUntil(api, attacker, started.body.run_id);
      expect(run.status).toBe("failed");
      expect(run.error).toContain("more than 200,000 evaluation steps");
      await victimDuring(() => Promise.all([1, 2, 3].map(() => startRun(api, attacker, flowId, {}, "?wait=true"))));
    });

    test("regular expressions that backtrack exponentially elsewhere answer at once (RE2)", async () => {
      const flowId = await attackFlow(computing("$contains(trigger.s, /(a|a?)+b/)", 3));
      const s = "a".repeat(26);
      const answer = await startRun(api, attacker, flowId, { s }, "?wait=true");
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ v: false });
      await victimDuring(() => startRun(api, attacker, flowId, { s }, "?wait=true"));
      const longest = await startRun(api, attacker, flowId, { s: "a".repeat(20_001) }, "?wait=true");
      const failed = await runUntil(api, attacker, longest.body.run_id);
      expect(failed.error).toContain("a regular expression is matched against at most 20,000 characters");
      const refused = await call(api, attacker, "POST", "/flows", computing("$match(trigger.s, /(a)\\1/)"));
      expect(refused.status).toBe(400);
      expect(refused.body.error).toContain("is not RE2 syntax");
    });

    test("a definition with more templates than a flow may hold is refused before any is parsed", async () => {
      const ones = `[${Array(500).fill(1).join(",")}]`;
      const huge = {
        name: "huge",
        steps: Array.from({ length: 100 }, (_, step) => ({
          name: `s${step}`,
          subject: "transform",
          payload: Object.fromEntries(Array.from({ length: 20 }, (_, field) => [`f${field}`, `{{ $count(${ones}) }}`])),
        })),
      };
      const created = await call(api, attacker, "POST", "/flows", huge);
      expect(created.status).toBe(413);
      expect(created.body.error).toBe(
        "the definition holds more than 32,768 characters of templates ({{ }}) in all its fields",
      );
      const validated = await call(api, attacker, "POST", "/flows/validate", huge);
      expect(validated.status).toBe(200);
      expect(validated.body.data).toEqual({
        valid: false,
        problems: [
          { path: "", message: "the flow holds more than 32,768 characters of templates ({{ }}) in all its fields" },
        ],
      });
      const many = {
        name: "many",
        steps: Array.from({ length: 100 }, (_, step) => ({
          name: `s${step}`,
          subject: "transform",
          payload: Object.fromEntries(Array.from({ length: 11 }, (_, field) => [`f${field}`, "{{ 1 }}"])),
        })),
      };
      const tooMany = await call(api, attacker, "POST", "/flows", many);
      expect(tooMany.status).toBe(413);
      expect(tooMany.body.error).toBe("the definition holds more than 1,000 templates ({{ }}) in all its fields");
      const long = { ...huge, steps: huge.steps.slice(0, 12) };
      // Node templates within the limits each, copied into one flow past them.
      const nodeIds: string[] = [];
      for (let index = 0; index < 4; index++) {
        const node = await call(api, attacker, "POST", "/hub/nodes", {
          collection: "big",
          data: {
            name: `n${index}`,
            node_type: "function",
            subject: "transform",
            payload: huge.steps[0]?.payload,
            options: {},
          },
        });
        expect(node.status).toBe(200);
        nodeIds.push(node.body.data.id);
      }
      const copying = {
        name: "copies",
        steps: nodeIds.map((id, index) => ({ name: `c${index}`, node: `nodes.${id}` })),
      };
      const copied = await call(api, attacker, "POST", "/flows", copying);
      expect(copied.status).toBe(413);
      expect(copied.body.error).toBe(
        "the flow, with the node templates it copies, holds more than 32,768 characters of templates ({{ }}) in all its fields",
      );
      expect((await call(api, attacker, "POST", "/flows/validate", copying)).body.data.problems).toEqual([
        { path: "", message: copied.body.error },
      ]);
      // A long array anywhere in the body is read, not spread into one call.
      const longArray = { ...copying, steps: [], padding: Array(3_000_000).fill(1) };
      expect((await call(api, attacker, "POST", "/flows", longArray)).status).toBe(400);
      expect((await call(api, attacker, "POST", "/flows/validate", longArray)).status).toBe(200);

      // Just within the limits: 30 expressions of a thousand characters, parsed on every check.
      const fields = (step: (typeof huge.steps)[number]) =>
        Object.fromEntries(Object.entries(step.payload).slice(0, 10));
      const largest = { ...huge, steps: huge.steps.slice(0, 3).map((step) => ({ ...step, payload: fields(step) })) };
      expect((await call(api, attacker, "POST", "/flows/validate", largest)).body.data.valid).toBe(true);
      await victimDuring(() =>
        Promise.all([
          call(api, attacker, "POST", "/flows", long),
          call(api, attacker, "POST", "/flows/validate", largest),
          call(api, attacker, "POST", "/flows", { ...largest, name: "largest" }),
        ]),
      );
    });
  });
}

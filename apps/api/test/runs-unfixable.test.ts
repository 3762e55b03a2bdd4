import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "kysely";
import { type Caller, call, newCaller } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * A failure no other try can fix ends the run once, with a clear error: its delivery is not
 * retried, dead-lettered and queued again without end (issue 29). The database refusing a
 * run's values is such a failure whatever produces it; here a constraint this test adds to
 * its own database refuses one step output, so that the refusal stands for any other.
 */
for (const { label, backend, redis, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(
    `failures that retrying cannot fix on ${label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let api: TestApi;
      let owner: Caller;

      beforeAll(async () => {
        api = await startTestApi({ backend, redis, worker: true });
        owner = await newCaller(api, "unfixable");
        await sql`alter table run_steps add constraint refuses_poison check (output -> 'v' is distinct from '"poison"')`.execute(
          api.services.db,
        );
      }, 60_000);
      afterAll(() => api.stop());

      /** Deliveries of the run consumer handed back for another try, or given up on, so far. */
      const retries = () => {
        const stats = api.worker?.stats()["flow-runs"];
        return (stats?.retried ?? 0) + (stats?.deadLettered ?? 0);
      };

      /** Creates a flow and runs it in wait mode, answering the run's answer. */
      async function runOnce(definition: Record<string, unknown>) {
        const created = await call(api, owner, "POST", "/flows", { name: "unfixable", ...definition });
        expect(created.status).toBe(200);
        return call(api, owner, "POST", `/flows/${created.body.data.id}/runs?wait=true`, {});
      }

      test("a run whose values the database refuses fails once, saying why", async () => {
        const before = retries();
        const answer = await runOnce({ steps: [{ name: "t", subject: "transform", payload: { v: "poison" } }] });
        expect(answer.status).toBe(500);
        expect(answer.body.error).toStartWith("the run cannot be stored: ");
        expect(answer.body.error).toContain('violates check constraint "refuses_poison"');
        expect(answer.body.error).toEndWith("(another try would fail the same way)");
        const run = await call(api, owner, "GET", `/runs/${answer.body.run_id}`);
        expect(run.body).toMatchObject({ status: "failed", error: answer.body.error });
        expect(retries()).toBe(before);
      });

      test("a limit's key that fails on the run's data fails the run once, naming the limit", async () => {
        const before = retries();
        const answer = await runOnce({
          concurrency: { limit: 1, key: "{{$error('no customer')}}" },
          steps: [{ name: "t", subject: "transform", payload: {} }],
        });
        expect(answer).toMatchObject({
          status: 500,
          body: { error: "concurrency.key: D3137: no customer at character 7" },
        });
        expect(retries()).toBe(before);
      });

      test("a value of the whole scope ({{$}}, {{$$}}, {{**}}) is the scope as the step began, answered at once", async () => {
        for (const expression of ["{{$}}", "{{$$}}"]) {
          const answer = await runOnce({
            steps: [
              { name: "a", subject: "transform", payload: { x: 1 } },
              { name: "t", subject: "transform", payload: { v: expression } },
            ],
          });
          expect({ expression, status: answer.status, body: answer.body }).toEqual({
            expression,
            status: 200,
            body: {
              v: { trigger: {}, steps: { a: { x: 1 } }, run: expect.objectContaining({ id: expect.any(String) }) },
            },
          });
        }
        const descendants = await runOnce({ steps: [{ name: "t", subject: "transform", payload: { v: "{{**}}" } }] });
        expect(descendants.status).toBe(200);
        expect(descendants.body.v).toContainEqual({ trigger: {}, steps: {}, run: expect.any(Object) });
      });

      test("a wait.event key or event data a run cannot store fails its step at once, naming the step", async () => {
        const cases: [string, Record<string, unknown>, string][] = [
          [
            "a NUL in a wait.event key",
            { name: "w", subject: "wait.event", payload: { key: "{{'a\\u0000b'}}" } },
            'step "w" failed: invalid payload: key: must not contain NUL characters',
          ],
          [
            "a lone surrogate in a wait.event key",
            { name: "w", subject: "wait.event", payload: { key: "{{'\\ud800'}}" } },
            'step "w" failed: invalid payload: key: must be valid Unicode text',
          ],
          [
            "a NUL in an event.send key",
            { name: "e", subject: "event.send", payload: { key: "{{'a\\u0000b'}}" } },
            'step "e" failed: invalid payload: key: must not contain NUL characters',
          ],
          [
            "a NUL in event data",
            {
              name: "e",
              subject: "event.send",
              payload: { key: "k", data: "{{'a\\u0000b'}}" },
              options: { attempts: 3, backoff_ms: 10 },
            },
            'step "e" failed: the value is not storable: unsupported Unicode escape sequence (\\u0000 cannot be converted to text.)',
          ],
          [
            "a lone surrogate in event data",
            { name: "e", subject: "event.send", payload: { key: "k", data: "{{'\\ud800'}}" } },
            'step "e" failed: the value is not storable: invalid input syntax for type json',
          ],
        ];
        for (const [label, step, error] of cases) {
          const before = retries();
          const answer = await runOnce({ steps: [step] });
          expect({ label, status: answer.status }).toEqual({ label, status: 500 });
          expect({ label, error: answer.body.error.slice(0, error.length) }).toEqual({ label, error });
          const run = await call(api, owner, "GET", `/runs/${answer.body.run_id}`);
          expect({ label, status: run.body.status, attempts: run.body.steps[0].attempts.length }).toEqual({
            label,
            status: "failed",
            attempts: 1,
          });
          expect(retries()).toBe(before);
        }
      });
    },
  );
}

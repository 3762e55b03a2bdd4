import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bearer, signUp } from "./accounts-helpers.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * Accounts share every process, statement and stream: what one account sends must never
 * fail another's work (architecture, "Tenants share processes, never each other's fate").
 */

const ECHO = [{ name: "echo", subject: "transform", payload: { got: "{{trigger.n}}" } }];

/** JSON PostgreSQL's jsonb refuses, sent as the raw text an attacker would send. */
const POISON = ['{"a":"\\ud800"}', '{"\\udc00":1}', '{"a":"x\\u0000y"}', '{"a":["\\udbff"],"b":1}'];

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(
    `one tenant's input and another's work on ${label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let api: TestApi;
      beforeAll(async () => {
        api = await startTestApi({ backend, redis, worker: true });
      }, 60_000);
      afterAll(() => api.stop());

      async function accountWithFlow(tag: string) {
        const { auth } = await signUp(api, tag);
        const headers = bearer(auth.auth_token);
        const created = await api.request("/flows", { method: "POST", headers, json: { name: tag, steps: ECHO } });
        expect(created.status).toBe(200);
        const { data } = (await created.json()) as { data: { id: string; webhook: { id: string } } };
        return { headers, flowId: data.id, webhookId: data.webhook.id };
      }

      test("poisoned deliveries among 1,000 valid ones of another account: those get 400, every valid one 200 and succeeds", async () => {
        const attacker = await accountWithFlow("attacker");
        const victim = await accountWithFlow("victim");
        const gateway = `poison-${crypto.randomUUID().slice(0, 8)}`;
        await api.request("/gateway", {
          method: "POST",
          headers: attacker.headers,
          json: { name: "g", subject: gateway },
        });
        const mapped = await api.request(`/gateway/${gateway}/mapping`, {
          method: "POST",
          headers: attacker.headers,
          json: { method: "POST", path: "/in", flow_id: attacker.flowId },
        });
        expect(mapped.status).toBe(200);

        const valid = 1000;
        const poisonedEvery = 4;
        const sends: { poisoned: boolean; send: () => Promise<Response> }[] = [];
        for (let n = 0; n < valid; n++) {
          sends.push({
            poisoned: false,
            send: () =>
              api.request(`/webhooks/${victim.webhookId}`, {
                method: "POST",
                headers: { "content-type": "application/json" },
                body: JSON.stringify({ n }),
              }),
          });
          if (n % poisonedEvery === 0) {
            const body = POISON[(n / poisonedEvery) % POISON.length] as string;
            const path = n % (2 * poisonedEvery) === 0 ? `/webhooks/${attacker.webhookId}` : `/gw/${gateway}/in`;
            sends.push({
              poisoned: true,
              send: () => api.request(path, { method: "POST", headers: { "content-type": "application/json" }, body }),
            });
          }
        }
        // A path parameter or query value decoded to NUL is poison too.
        sends.push({ poisoned: true, send: () => api.request(`/gw/${gateway}/in?q=%00`, { method: "POST" }) });

        const statuses = { valid: new Map<number, number>(), poisoned: new Map<number, number>() };
        const runIds: string[] = [];
        let next = 0;
        const connection = async () => {
          for (let i = next++; i < sends.length; i = next++) {
            const { poisoned, send } = sends[i] as (typeof sends)[number];
            const response = await send();
            const body = (await response.json()) as { run_id?: string; error?: string };
            const tally = poisoned ? statuses.poisoned : statuses.valid;
            tally.set(response.status, (tally.get(response.status) ?? 0) + 1);
            if (!poisoned && body.run_id) runIds.push(body.run_id);
            if (poisoned && response.status === 400) expect(body.error).toStartWith("invalid input:");
          }
        };
        await Promise.all(Array.from({ length: 64 }, connection));

        expect(Object.fromEntries(statuses.valid)).toEqual({ 200: valid });
        expect(Object.fromEntries(statuses.poisoned)).toEqual({ 400: sends.length - valid });
        expect(new Set(runIds).size).toBe(valid);

        // Every accepted run of the victim ends succeeded.
        const deadline = Date.now() + 60_000;
        let succeeded = 0;
        while (Date.now() < deadline) {
          succeeded = 0;
          let cursor: string | null = null;
          do {
            const page: Response = await api.request(
              `/flows/${victim.flowId}/runs?status=succeeded&limit=100${cursor ? `&cursor=${cursor}` : ""}`,
              { headers: victim.headers },
            );
            const { data, next_cursor } = (await page.json()) as { data: unknown[]; next_cursor: string | null };
            succeeded += data.length;
            cursor = next_cursor;
          } while (cursor);
          if (succeeded === valid) break;
          await Bun.sleep(200);
        }
        expect(succeeded).toBe(valid);
        // Nothing of the attacker's poison was recorded.
        const attackerRuns = await api.request(`/flows/${attacker.flowId}/runs`, { headers: attacker.headers });
        expect(((await attackerRuns.json()) as { data: unknown[] }).data).toEqual([]);
      }, 120_000);
    },
  );
}

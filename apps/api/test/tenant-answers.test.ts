import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { sql } from "kysely";
import { bearer, signUp } from "./accounts-helpers.ts";
import type { Caller } from "./context.ts";
import { runUntil } from "./context.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

/**
 * What a flow sends back, and the failures it records, on the platform's own origin: no
 * secret in any error, no script or state for the origin, no URL reshaped by data.
 */

/** A secret with every character a URL, a form or JSON writes differently. */
const TOKEN = 'tok/en?&=+ é"x';

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`tenant answers on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let api: TestApi;
    let owner: Caller;
    let upstream: Server<undefined>;
    let base: string;
    /** What the upstream was asked, newest last. */
    const seen: { path: string; query: [string, string][] }[] = [];

    beforeAll(async () => {
      upstream = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch(request) {
          const url = new URL(request.url);
          seen.push({ path: url.pathname, query: [...url.searchParams] });
          if (url.pathname.startsWith("/echo")) {
            // An upstream that repeats what it was sent, as error pages often do.
            return new Response(`bad request ${request.url} auth=${request.headers.get("authorization")}`, {
              status: 500,
            });
          }
          if (url.pathname === "/loop") return Response.redirect(`${url.origin}/loop?n=${Math.random()}`, 302);
          if (url.pathname === "/slow") return Bun.sleep(2000).then(() => new Response("late"));
          return Response.json({ path: url.pathname, query: [...url.searchParams] });
        },
      });
      base = `http://127.0.0.1:${upstream.port}`;
      api = await startTestApi({
        backend,
        redis,
        worker: true,
        env: { HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1", WAIT_TIMEOUT_MS: "10000" },
      });
      const { auth } = await signUp(api, "tenant");
      owner = { accountId: auth.account.id, headers: bearer(auth.auth_token) };
      const put = await api.request("/secrets/token", {
        method: "PUT",
        headers: owner.headers,
        json: { value: TOKEN },
      });
      expect(put.status).toBe(200);
    }, 60_000);
    afterAll(async () => {
      await api?.stop();
      upstream?.stop(true);
    });

    async function flow(steps: unknown[], trigger: Record<string, unknown> = {}) {
      const created = await api.request("/flows", {
        method: "POST",
        headers: owner.headers,
        json: { name: "tenant", trigger: { type: "webhook", ...trigger }, steps },
      });
      const body = (await created.json()) as { data: { id: string; webhook: { id: string } }; error?: string };
      if (created.status !== 200) throw new Error(`POST /flows: ${created.status} ${body.error}`);
      return body.data;
    }

    async function gateway(flowId: string, method: string, path: string) {
      const subject = `g${crypto.randomUUID().slice(0, 8)}`;
      await api.request("/gateway", { method: "POST", headers: owner.headers, json: { name: "g", subject } });
      const mapped = await api.request(`/gateway/${subject}/mapping`, {
        method: "POST",
        headers: owner.headers,
        json: { method, path, flow_id: flowId },
      });
      expect(mapped.status).toBe(200);
      return subject;
    }

    const call = (url: string, options: Record<string, unknown> = {}) => ({
      name: "call",
      subject: "http.request",
      payload: { url, headers: { authorization: "Bearer {{secrets.token}}" }, ...options },
    });

    describe("secrets in failures", () => {
      const spellings = [
        TOKEN,
        encodeURIComponent(TOKEN),
        new URLSearchParams({ v: TOKEN }).toString().slice(2),
        JSON.stringify(TOKEN).slice(1, -1),
      ];

      test("every failure of an http.request step records [secret:token], never the value in any spelling", async () => {
        const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
        const refusedPort = closed.port;
        closed.stop(true);
        const cases = [
          call(`${base}/echo/{{secrets.token}}?key={{secrets.token}}`),
          call(`http://127.0.0.1:${refusedPort}/x/{{secrets.token}}`),
          call(`${base}/slow?key={{secrets.token}}`, { timeout: 200 }),
          call(`${base}/loop?key={{secrets.token}}`),
        ];
        for (const step of cases) {
          const { id } = await flow([step]);
          const started = await api.request(`/flows/${id}/runs`, { method: "POST", headers: owner.headers, json: {} });
          const run = await runUntil(api, owner, ((await started.json()) as { run_id: string }).run_id);
          expect(run.status).toBe("failed");
          const text = JSON.stringify(run);
          for (const spelling of spellings)
            expect({ url: step.payload.url, spelling, leaked: text.includes(spelling) }).toEqual({
              url: step.payload.url,
              spelling,
              leaked: false,
            });
          expect(run.error).toContain("[secret:token]");
          expect(run.steps[0].attempts[0].error).toContain("[secret:token]");
        }
      });

      test("callers without a credential hear that the flow failed; the account hears why, redacted", async () => {
        const failing = await flow([call(`${base}/echo/{{secrets.token}}`)], { response_mode: "wait" });
        const subject = await gateway(failing.id, "POST", "/fail");
        for (const path of [`/gw/${subject}/fail`, `/webhooks/${failing.webhook.id}`]) {
          const answered = await api.request(path, { method: "POST", json: {} });
          const body = (await answered.json()) as { error: string; run_id: string };
          expect({ path, status: answered.status, error: body.error }).toEqual({
            path,
            status: 500,
            error: "the flow failed",
          });
          const run = await runUntil(api, owner, body.run_id);
          expect(run.error).toStartWith('step "call" failed: http.request: GET');
        }
        const byHand = await api.request(`/flows/${failing.id}/runs?wait=true`, {
          method: "POST",
          headers: owner.headers,
          json: {},
        });
        const detail = (await byHand.json()) as { error: string };
        expect(byHand.status).toBe(500);
        expect(detail.error).toContain("answered 500");
        expect(detail.error).toContain("[secret:token]");
        expect(detail.error).not.toContain("tok/en");
      });
    });

    test("data in an http.request URL stays in its path segment and query value", async () => {
      const relay = await flow([
        call(`${base}/items/{{trigger.params.id}}?q={{trigger.query.q}}`),
        { name: "answer", subject: "respond", payload: { body: "{{steps.call.body}}" } },
      ]);
      const subject = await gateway(relay.id, "GET", "/items/:id");
      const answered = await api.request(
        `/gw/${subject}/items/..%2F..%2Fadmin?q=${encodeURIComponent("x?api_key=attacker&")}`,
      );
      expect(answered.status).toBe(200);
      expect(await answered.json()).toEqual({ path: "/items/..%2F..%2Fadmin", query: [["q", "x?api_key=attacker&"]] });

      // A value that is a whole segment of dots would still walk up once the URL is parsed.
      const dots = await flow([call(`${base}/items/{{trigger.query.id}}/secret`)]);
      const upward = await gateway(dots.id, "GET", "/up");
      expect((await api.request(`/gw/${upward}/up?id=..`)).status).toBe(500);
      const runs = await api.request(`/flows/${dots.id}/runs?status=failed`, { headers: owner.headers });
      const [failed] = ((await runs.json()) as { data: { error: string }[] }).data;
      expect(failed?.error).toBe('step "call" failed: {{trigger.query.id}} would make the URL\'s path segment ".."');
      expect(seen.some((request) => request.path === "/admin" || request.path === "/")).toBe(false);
    });

    describe("answers sent for a flow", () => {
      const page = {
        name: "page",
        subject: "respond",
        payload: {
          status: 200,
          headers: { "content-type": "text/html", "content-security-policy": "default-src 'self'", "x-flow": "1" },
          body: "<script>fetch('/accounts/api-keys')</script>",
        },
      };

      test("are sandboxed: CSP sandbox (beside the flow's own policy) and nosniff, on gateways and webhooks", async () => {
        const html = await flow([page], { response_mode: "wait" });
        const subject = await gateway(html.id, "GET", "/page");
        for (const answered of [
          await api.request(`/gw/${subject}/page`),
          await api.request(`/webhooks/${html.webhook.id}`, { method: "POST", json: {} }),
          await api.request(`/flows/${html.id}/runs?wait=true`, { method: "POST", headers: owner.headers, json: {} }),
        ]) {
          expect(answered.status).toBe(200);
          expect(answered.headers.get("content-type")).toBe("text/html");
          expect(answered.headers.get("content-security-policy")).toBe("default-src 'self', sandbox");
          expect(answered.headers.get("x-content-type-options")).toBe("nosniff");
          expect(answered.headers.get("x-flow")).toBe("1");
        }
      });

      test("cannot set state for the platform's origin: refused at save, dropped when an older revision sends it", async () => {
        for (const name of ["Set-Cookie", "service-worker-allowed", "Clear-Site-Data", "Strict-Transport-Security"]) {
          const step = { ...page, payload: { ...page.payload, headers: { [name]: "x" } } };
          const refused = await api.request("/flows", {
            method: "POST",
            headers: owner.headers,
            json: { name: "cookie", steps: [step] },
          });
          expect(refused.status).toBe(400);
          expect(((await refused.json()) as { error: string }).error).toStartWith(
            `invalid input: steps.0.payload.headers.${name}: a flow's answer may not send ${name}`,
          );
          const node = await api.request("/hub/nodes", {
            method: "POST",
            headers: owner.headers,
            json: {
              collection: "c",
              data: { name: "n", node_type: "function", subject: "respond", payload: step.payload },
            },
          });
          expect(node.status).toBe(400);
        }

        // A revision saved before the rule, holding Set-Cookie: it runs, and the header is not sent.
        const old = await flow([page], { response_mode: "wait" });
        const withCookie = [
          { ...page, payload: { ...page.payload, headers: { "set-cookie": "sid=1; Path=/", "x-flow": "1" } } },
        ];
        await sql`update flow_revisions set steps = ${JSON.stringify(
          withCookie.map((step) => ({ ...step, options: { timeout: 30000, attempts: 1, backoff_ms: 1000 } })),
        )}::jsonb where flow_id = ${old.id}::uuid`.execute(api.services.db);
        const answered = await api.request(`/webhooks/${old.webhook.id}`, { method: "POST", json: {} });
        expect(answered.status).toBe(200);
        expect(answered.headers.get("set-cookie")).toBeNull();
        expect(answered.headers.get("x-flow")).toBe("1");
      });

      /** Headers that would act on the origin, the browser or a proxy in front, each off the allow list. */
      const OFF_THE_LIST: Record<string, string> = {
        NEL: '{"report_to":"t","max_age":86400}',
        "Report-To": '{"group":"t","max_age":86400,"endpoints":[{"url":"https://evil.example/r"}]}',
        "Reporting-Endpoints": 't="https://evil.example/r"',
        Refresh: "0; url=https://evil.example/",
        Link: "</gw/sw.js>; rel=serviceworker",
        "Accept-CH": "Sec-CH-UA-Full-Version-List",
        "Set-Login": "logged-in",
        "Permissions-Policy": "camera=*",
        "Content-Encoding": "gzip",
        "Content-Length": "1",
        "Content-Security-Policy-Report-Only": "default-src 'none'; report-uri https://evil.example/r",
        "WWW-Authenticate": 'Basic realm="platform"',
        "X-Frame-Options": "ALLOWALL",
        "X-Content-Type-Options": "sniff",
        "X-Accel-Redirect": "/internal/",
        "X-Request-Id": "forged",
      };
      /** Headers on the allow list, one of each family, with a value each. */
      const ON_THE_LIST: Record<string, string> = {
        "content-type": "text/csv",
        "content-language": "fr",
        "content-disposition": 'attachment; filename="orders.csv"',
        "cache-control": "public, max-age=60",
        etag: '"v1"',
        "last-modified": "Wed, 21 Oct 2015 07:28:00 GMT",
        expires: "Wed, 21 Oct 2015 07:28:00 GMT",
        vary: "accept-language",
        age: "3",
        "access-control-allow-origin": "https://shop.example",
        "access-control-expose-headers": "x-order",
        location: "/gw/elsewhere",
        "retry-after": "30",
        "x-order": "42",
      };
      const answering = (headers: unknown) => ({
        respond: { name: "answer", subject: "respond", payload: { status: 200, headers, body: "a,b" } },
        stop: { name: "answer", stop: { response: { status: 200, headers, body: "a,b" } } },
      });

      test("send only headers on the allow list: any other is refused at save in a respond step, a stop's response and a node template, naming the step and header", async () => {
        for (const [name, value] of Object.entries(OFF_THE_LIST)) {
          const { respond, stop } = answering({ [name]: value });
          for (const [step, field] of [
            [respond, `steps.0.payload.headers.${name}`],
            [stop, `steps.0.stop.response.headers.${name}`],
          ] as const) {
            const refused = await api.request("/flows", {
              method: "POST",
              headers: owner.headers,
              json: { name: "off the list", steps: [step] },
            });
            const said = `a flow's answer may not send ${name}: `;
            const { error = "" } = (await refused.json()) as { error?: string };
            const prefix = `invalid input: ${field}: ${said}`;
            expect({ status: refused.status, error: error.slice(0, prefix.length) }).toEqual({
              status: 400,
              error: prefix,
            });
            const checked = await api.request("/flows/validate", {
              method: "POST",
              headers: owner.headers,
              json: { name: "off the list", steps: [step] },
            });
            const { problems } = ((await checked.json()) as { data: { problems: { path: string; message: string }[] } })
              .data;
            expect(problems.map(({ path, message }) => ({ path, message: message.slice(0, said.length) }))).toEqual([
              { path: field, message: said },
            ]);
          }
          const node = await api.request("/hub/nodes", {
            method: "POST",
            headers: owner.headers,
            json: {
              collection: "c",
              data: { name: "n", node_type: "function", subject: "respond", payload: respond.payload },
            },
          });
          expect({ name, status: node.status }).toEqual({ name, status: 400 });
        }
      });

      test("a node template saved before the rule, holding a header off the list, is refused where a flow copies it", async () => {
        const created = await api.request("/hub/nodes", {
          method: "POST",
          headers: owner.headers,
          json: {
            collection: "c",
            data: { name: "n", node_type: "function", subject: "respond", payload: { headers: { "x-ok": "1" } } },
          },
        });
        expect(created.status).toBe(200);
        const { subject } = (await created.json()) as { subject: string };
        await sql`update node_templates set payload = ${JSON.stringify({ headers: { NEL: "{}" } })}::jsonb
          where id = ${subject.slice("nodes.".length)}::uuid`.execute(api.services.db);
        const refused = await api.request("/flows", {
          method: "POST",
          headers: owner.headers,
          json: { name: "copies", steps: [{ name: "answer", node: subject }] },
        });
        expect(refused.status).toBe(400);
        expect(((await refused.json()) as { error: string }).error).toStartWith(
          `invalid input: steps.0.node: ${subject} payload.headers.NEL: a flow's answer may not send NEL: `,
        );
      });

      test("headers on the allow list are saved and sent, from a respond step and a stop's response", async () => {
        const { respond, stop } = answering(ON_THE_LIST);
        for (const step of [respond, stop]) {
          const sending = await flow([step], { response_mode: "wait" });
          const subject = await gateway(sending.id, "GET", "/listed");
          const answered = await api.request(`/gw/${subject}/listed`);
          expect(answered.status).toBe(200);
          expect(await answered.text()).toBe("a,b");
          for (const [name, value] of Object.entries(ON_THE_LIST)) {
            expect({ name, value: answered.headers.get(name) }).toEqual({ name, value });
          }
          expect(answered.headers.get("content-security-policy")).toBe("sandbox");
          expect(answered.headers.get("x-content-type-options")).toBe("nosniff");
        }
      });

      test("headers off the list never reach a caller: named by an expression at run time, or held by a revision saved before the rule", async () => {
        const everything = { ...OFF_THE_LIST, ...ON_THE_LIST };
        const proxied = await flow(
          [{ name: "answer", subject: "respond", payload: { headers: "{{trigger.send}}", body: "a,b" } }],
          { response_mode: "wait" },
        );
        const old = await flow([answering({ "x-order": "42" }).stop], { response_mode: "wait" });
        await sql`update flow_revisions set steps = ${JSON.stringify([answering(everything).stop])}::jsonb
          where flow_id = ${old.id}::uuid`.execute(api.services.db);
        for (const answered of [
          await api.request(`/webhooks/${proxied.webhook.id}`, { method: "POST", json: { send: everything } }),
          await api.request(`/webhooks/${old.webhook.id}`, { method: "POST", json: {} }),
        ]) {
          expect(answered.status).toBe(200);
          expect(await answered.text()).toBe("a,b");
          for (const name of Object.keys(OFF_THE_LIST)) {
            const platforms: Record<string, string | null> = {
              "content-length": "3",
              "x-content-type-options": "nosniff",
              "x-request-id": expect.not.stringMatching(/^forged$/),
            };
            const expected = platforms[name.toLowerCase()] ?? null;
            expect({ name, value: answered.headers.get(name) }).toEqual({ name, value: expected });
          }
          for (const [name, value] of Object.entries(ON_THE_LIST)) {
            expect({ name, value: answered.headers.get(name) }).toEqual({ name, value });
          }
        }
      });
    });
  });
}

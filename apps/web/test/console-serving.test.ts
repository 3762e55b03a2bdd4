import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { bearer, PASSWORD, signUp } from "../../api/test/accounts-helpers.ts";
import { createFlow } from "../../api/test/context.ts";
import { createGateway, mapRoute } from "../../api/test/gateway-helpers.ts";
import { startTestApi, type TestApi } from "../../api/test/harness.ts";
import { consoleBuild, launchBrowser, newContext, noBrowser } from "./browser.ts";

/** The budget of the issue: the first load's JavaScript, compressed as sent. */
const FIRST_LOAD_JS_BUDGET = 250 * 1024;

describe("console: how the API serves it", () => {
  let api: TestApi;
  let dir: string;
  beforeAll(async () => {
    dir = await consoleBuild();
    // The worker runs the gateway flow that answers a tenant's script.
    api = await startTestApi({ backend: "pglite", consoleDir: dir, worker: true });
  }, 60_000);
  afterAll(async () => {
    await api?.stop();
  });

  test("every console page is one document with a strict CSP, never framed; / leads there and API paths stay the API's", async () => {
    const root = await api.request("/", { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/console");
    for (const path of ["/console", "/console/flows/123", "/invitations/accept", "/password/reset"]) {
      const page = await api.request(path);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
      const csp = page.headers.get("content-security-policy") ?? "";
      // The console's own files, and not the rest of the origin, where tenants' answers are.
      expect(csp).toContain(`script-src ${api.url}/console/assets/;`);
      expect(csp).toContain(`style-src ${api.url}/console/assets/;`);
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain("unsafe-inline");
      expect(page.headers.get("x-frame-options")).toBe("DENY");
      // No inline script in the document: everything it runs is a file of its own.
      expect(await page.text()).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    }
    expect((await api.request("/flows")).status).toBe(401);
  });

  test("the policy names the origin the page was asked at, and no other source when the Host is no host", async () => {
    const port = new URL(api.url).port;
    const policyAt = async (host: string) =>
      (await api.request("/console/flows", { headers: { host } })).headers.get("content-security-policy") ?? "";
    expect(await policyAt(`Console.Example:${port}`)).toContain(
      `script-src http://console.example:${port}/console/assets/;`,
    );
    const injected = await policyAt("a;script-src");
    expect(injected).toContain("script-src 'none';");
    expect(injected).not.toContain("a;script-src");
  });

  test.skipIf(Boolean(noBrowser))(
    `a tenant's script on the same origin never runs as the console's, however its path is spelled${noBrowser ? ` (skipped: ${noBrowser})` : ""}`,
    async () => {
      const { auth } = await signUp(api, "console-tenant-script");
      const owner = bearer(auth.auth_token);
      const script = await createFlow(api, { headers: owner }, [
        {
          name: "script",
          subject: "respond",
          payload: {
            status: 200,
            headers: { "content-type": "text/javascript" },
            body: "document.documentElement.dataset.tenantScript = 'ran';",
          },
        },
      ]);
      const topic = await createGateway(api, owner, { subject: "console-script" });
      await mapRoute(api, owner, topic, "GET", "/x.js", script);
      // What an injection would load: the gateway answers a script a browser would run.
      const answer = await api.request(`/gw/${topic}/x.js`);
      expect(answer.status).toBe(200);
      expect(answer.headers.get("content-type")).toStartWith("text/javascript");
      expect((await api.request(`/console/assets/..%2F..%2Fgw%2F${topic}%2Fx.js`)).status).toBe(404);

      const browser = await launchBrowser();
      try {
        const { page, errors } = await newContext(browser);
        await page.goto(`${api.url}/console/sign-in`);
        await page.getByRole("button", { name: "Sign in" }).waitFor();
        const outcomes = await page.evaluate(
          (sources) =>
            Promise.all(
              sources.map(
                (src) =>
                  new Promise<string>((resolve) => {
                    const element = document.createElement("script");
                    element.src = src;
                    element.onload = () => resolve(`${src}: loaded`);
                    element.onerror = () => resolve(`${src}: refused`);
                    document.head.append(element);
                  }),
              ),
            ),
          [
            `/gw/${topic}/x.js`,
            `/console/assets/../../gw/${topic}/x.js`,
            `/console/assets/%2e%2e/%2e%2e/gw/${topic}/x.js`,
          ],
        );
        expect(outcomes).toEqual([
          `/gw/${topic}/x.js: refused`,
          `/console/assets/../../gw/${topic}/x.js: refused`,
          `/console/assets/%2e%2e/%2e%2e/gw/${topic}/x.js: refused`,
        ]);
        expect(await page.evaluate(() => document.documentElement.dataset.tenantScript ?? "never ran")).toBe(
          "never ran",
        );
        // The browser says why: the console's policy, not a failed request.
        expect(errors.filter((error) => error.includes("Content Security Policy")).length).toBeGreaterThanOrEqual(3);
      } finally {
        await browser.close();
      }
    },
  );

  test("assets are sent compressed as asked, cached for good, and the first load stays within its JavaScript budget", async () => {
    const html = await (await api.request("/console")).text();
    const scripts = [...html.matchAll(/src="(\/console\/assets\/[^"]+\.js)"/g)].map((match) => match[1] as string);
    expect(scripts.length).toBeGreaterThan(0);
    let sent = 0;
    for (const script of scripts) {
      // As the wire carries it: Bun's fetch would otherwise decompress the body.
      const brotli = await api.request(script, {
        headers: { "accept-encoding": "gzip, deflate, br" },
        decompress: false,
      } as RequestInit);
      expect(brotli.headers.get("content-encoding")).toBe("br");
      expect(brotli.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(brotli.headers.get("vary")).toBe("accept-encoding");
      sent += (await brotli.arrayBuffer()).byteLength;
      const gzip = await api.request(script, { headers: { "accept-encoding": "gzip" } });
      expect(gzip.headers.get("content-encoding")).toBe("gzip");
      const plain = await api.request(script, { headers: { "accept-encoding": "identity" } });
      expect(plain.headers.get("content-encoding")).toBeNull();
      expect(plain.headers.get("content-type")).toStartWith("text/javascript");
    }
    expect(sent).toBeLessThanOrEqual(FIRST_LOAD_JS_BUDGET);
    const built = await readdir(join(dir, "assets"));
    expect(built.some((name) => name.endsWith(".js.br"))).toBe(true);
    expect((await api.request("/console/assets/..%2Findex.html")).status).toBe(404);
    expect((await api.request("/console/assets/nothing-here.js")).status).toBe(404);
  });

  test("the session routes keep the refresh token in an HttpOnly cookie for themselves, and refuse other sites", async () => {
    const user = await signUp(api, "console-session");
    const login = await api.request("/accounts/auth-with-password", {
      method: "POST",
      json: { email: user.email, password: PASSWORD },
    });
    const { data } = (await login.json()) as { data: { refresh_token: string } };

    const crossSite = await api.request("/console/session", {
      method: "POST",
      headers: { "sec-fetch-site": "cross-site" },
      json: { refresh_token: data.refresh_token },
    });
    expect(crossSite.status).toBe(403);
    expect(crossSite.headers.get("set-cookie")).toBeNull();

    const kept = await api.request("/console/session", {
      method: "POST",
      headers: { "sec-fetch-site": "same-origin" },
      json: { refresh_token: data.refresh_token },
    });
    expect(kept.status).toBe(204);
    const cookie = kept.headers.get("set-cookie") ?? "";
    expect(cookie).toStartWith(`console_refresh=${data.refresh_token};`);
    expect(cookie).toContain("Path=/console/session");
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");

    const fromElsewhere = await api.request("/console/session/refresh", {
      method: "POST",
      headers: { cookie: `console_refresh=${data.refresh_token}`, origin: "https://evil.example" },
    });
    expect(fromElsewhere.status).toBe(403);

    const refreshed = await api.request("/console/session/refresh", {
      method: "POST",
      headers: { cookie: `console_refresh=${data.refresh_token}`, "sec-fetch-site": "same-origin" },
    });
    expect(refreshed.status).toBe(200);
    const body = (await refreshed.json()) as { data: Record<string, unknown> };
    // The new access token, and never the refresh token: that stays in the (rotated) cookie.
    expect(body.data.auth_token).toBeString();
    expect(body.data.refresh_token).toBeUndefined();
    const rotated = refreshed.headers.get("set-cookie") ?? "";
    expect(rotated).toContain("HttpOnly");
    expect(rotated).not.toContain(data.refresh_token);

    const noCookie = await api.request("/console/session/refresh", {
      method: "POST",
      headers: { "sec-fetch-site": "same-origin" },
    });
    expect(noCookie.status).toBe(401);
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { clientAddress } from "../src/client-address.ts";
import { loadApiConfig } from "../src/config.ts";
import { readBody, uniqueEmail } from "./accounts-helpers.ts";
import { brokerVariants, startTestApi, type TestApi } from "./harness.ts";

/** A failed password sign-in carrying `forwardedFor` as X-Forwarded-For. */
function wrongPasswordVia(api: TestApi, forwardedFor: string): Promise<Response> {
  return api.request("/accounts/auth-with-password", {
    method: "POST",
    headers: { "x-forwarded-for": forwardedFor },
    json: { email: uniqueEmail("proxied"), password: "wrong password here" },
  });
}

async function expectRateLimited(response: Response): Promise<void> {
  expect(response.status).toBe(429);
  expect(await readBody(response)).toEqual({ error: "too many attempts; try again later" });
}

describe("the client's address behind reverse proxies", () => {
  test("no trusted proxy: the socket's peer, whatever X-Forwarded-For says", () => {
    expect(clientAddress("10.0.0.5", "203.0.113.7", 0)).toBe("10.0.0.5");
  });

  test("one proxy: the entry it appended, not the ones the client wrote before it", () => {
    expect(clientAddress("10.0.0.5", "203.0.113.7", 1)).toBe("203.0.113.7");
    expect(clientAddress("10.0.0.5", "198.51.100.1, 203.0.113.7", 1)).toBe("203.0.113.7");
    expect(clientAddress("10.0.0.5", "198.51.100.1,2001:db8::1", 1)).toBe("2001:db8::1");
  });

  test("two proxies: the entry the outer one appended", () => {
    expect(clientAddress("10.0.0.5", "198.51.100.1, 203.0.113.7, 10.0.0.9", 2)).toBe("203.0.113.7");
  });

  test("fewer entries than proxies: the furthest one; no header or a malformed entry: the peer", () => {
    expect(clientAddress("10.0.0.5", "203.0.113.7", 3)).toBe("203.0.113.7");
    expect(clientAddress("10.0.0.5", null, 1)).toBe("10.0.0.5");
    expect(clientAddress("10.0.0.5", "", 1)).toBe("10.0.0.5");
    expect(clientAddress("10.0.0.5", "198.51.100.1, unknown", 1)).toBe("10.0.0.5");
    expect(clientAddress("10.0.0.5", `203.0.113.7, ${"9".repeat(5000)}`, 1)).toBe("10.0.0.5");
  });

  test("TRUSTED_PROXY_HOPS defaults to 0 and refuses what is not a small count", () => {
    expect(loadApiConfig({}, "embedded").trustedProxyHops).toBe(0);
    expect(loadApiConfig({ TRUSTED_PROXY_HOPS: "1" }, "embedded").trustedProxyHops).toBe(1);
    expect(() => loadApiConfig({ TRUSTED_PROXY_HOPS: "-1" }, "embedded")).toThrow("TRUSTED_PROXY_HOPS");
    expect(() => loadApiConfig({ TRUSTED_PROXY_HOPS: "many" }, "embedded")).toThrow("TRUSTED_PROXY_HOPS");
  });
});

// Sign-in limits per client address are where the address matters; the limiter lives in the broker.
for (const { backend, redis, label, skip } of brokerVariants()) {
  describe.skipIf(Boolean(skip))(
    `sign-in limits per client behind a proxy on ${label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let proxied: TestApi;
      let direct: TestApi;
      beforeAll(async () => {
        const env = { LOGIN_FAILURES_PER_IP: "2" };
        [proxied, direct] = await Promise.all([
          startTestApi({ backend, redis, env, trustedProxyHops: 1 }),
          startTestApi({ backend, redis, env }),
        ]);
      }, 60_000);
      afterAll(() => Promise.all([proxied?.stop(), direct?.stop()]));

      test("behind a trusted proxy each client has its own budget, and forging earlier entries does not reset it", async () => {
        const client = "203.0.113.7";
        expect((await wrongPasswordVia(proxied, client)).status).toBe(401);
        expect((await wrongPasswordVia(proxied, `198.51.100.1, ${client}`)).status).toBe(401);
        await expectRateLimited(await wrongPasswordVia(proxied, `198.51.100.2, ${client}`));
        // Another client behind the same proxy still has its attempts.
        expect((await wrongPasswordVia(proxied, "203.0.113.7, 203.0.113.8")).status).toBe(401);
      });

      test("with no trusted proxy a forged X-Forwarded-For does not dodge the limit", async () => {
        expect((await wrongPasswordVia(direct, "203.0.113.1")).status).toBe(401);
        expect((await wrongPasswordVia(direct, "203.0.113.2")).status).toBe(401);
        await expectRateLimited(await wrongPasswordVia(direct, "203.0.113.3"));
      });
    },
  );
}

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { request } from "node:http";
import { totpCodeFromUrl } from "@platform/core/testing";
import { bearer, logIn, PASSWORD, readBody, signUp, uniqueEmail } from "./accounts-helpers.ts";
import { brokerVariants, startTestApi, type TestApi } from "./harness.ts";

/** A loopback address of this run's own (all of 127.0.0.0/8 reaches the server). */
function freshLoopbackAddress(): string {
  const octet = () => 1 + Math.floor(Math.random() * 254);
  return `127.${octet()}.${octet()}.${octet()}`;
}

/** A failed password sign-in sent from `localAddress`, which the server sees as the client's IP. */
function wrongPasswordFrom(api: TestApi, localAddress: string): Promise<Response> {
  return signInFrom(api, localAddress, uniqueEmail("spray"), "wrong password here");
}

function signInFrom(api: TestApi, localAddress: string, email: string, password: string): Promise<Response> {
  const url = new URL(`${api.url}/accounts/auth-with-password`);
  const body = JSON.stringify({ email, password });
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        localAddress,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
        incoming.on("end", () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(incoming.headers))
            if (typeof value === "string") headers.set(name, value);
          resolve(new Response(Buffer.concat(chunks), { status: incoming.statusCode, headers }));
        });
      },
    );
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

async function expectRateLimited(response: Response): Promise<void> {
  expect(response.status).toBe(429);
  expect(await readBody(response)).toEqual({ error: "too many attempts; try again later" });
  const retryAfter = Number(response.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(900);
}

// The limiter lives in the broker: once on the database's own adapter, once on Redis.
for (const { backend, redis, label, skip } of brokerVariants()) {
  describe.skipIf(Boolean(skip))(`accounts: brute-force limits on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    describe("per email", () => {
      let api: TestApi;
      beforeAll(async () => {
        api = await startTestApi({
          backend,
          redis,
          env: { LOGIN_ATTEMPTS_PER_EMAIL: "3" },
        });
      }, 60_000);
      afterAll(() => api.stop());

      test("after the email's attempts are spent, even the right password gets 429 with Retry-After", async () => {
        const { email, password } = await signUp(api, "limited");
        for (let attempt = 0; attempt < 3; attempt++) {
          expect((await logIn(api, email, "wrong password here")).status).toBe(401);
        }
        await expectRateLimited(await logIn(api, email, password));
        // Another email from the same address is unaffected.
        const other = await signUp(api, "unaffected");
        expect((await logIn(api, other.email)).status).toBe(200);
      });

      test("guesses at the second factor are limited per email too", async () => {
        const owner = await signUp(api, "mfa-limited");
        const setup = await readBody(
          await api.request("/accounts/totp/setup", { method: "POST", headers: bearer(owner.auth.auth_token) }),
        );
        const verify = await api.request("/accounts/totp/verify", {
          method: "POST",
          headers: bearer(owner.auth.auth_token),
          json: { code: totpCodeFromUrl(setup.data.otpauth_url) },
        });
        expect(verify.status).toBe(200); // second-factor attempt 1 of 3
        const login = await readBody(await logIn(api, owner.email));
        const guess = () =>
          api.request("/accounts/auth-with-mfa", {
            method: "POST",
            json: { mfa_token: login.data.mfa_token, totp_code: "000000" },
          });
        expect((await guess()).status).toBe(401); // 2 of 3
        expect((await guess()).status).toBe(401); // 3 of 3
        await expectRateLimited(await guess());
      });
    });

    // Each run signs in from a loopback address of its own, so counts that Redis keeps
    // from earlier runs never reach this one.
    describe("per client address", () => {
      let api: TestApi;
      beforeAll(async () => {
        api = await startTestApi({
          backend,
          env: { LOGIN_ATTEMPTS_PER_IP: "3" },
        });
      }, 60_000);
      afterAll(() => api.stop());

      test("attempts an address is refused for do not spend the email's budget", async () => {
        const guarded = await startTestApi({
          backend,
          redis,
          env: { LOGIN_ATTEMPTS_PER_IP: "2", LOGIN_ATTEMPTS_PER_EMAIL: "3" },
        });
        try {
          const victim = await signUp(guarded, "lockout-victim");
          const attacker = freshLoopbackAddress();
          for (let attempt = 0; attempt < 2; attempt++) {
            expect((await signInFrom(guarded, attacker, victim.email, "wrong password here")).status).toBe(401);
          }
          for (let attempt = 0; attempt < 5; attempt++) {
            await expectRateLimited(await signInFrom(guarded, attacker, victim.email, "wrong password here"));
          }
          const own = await signInFrom(guarded, freshLoopbackAddress(), victim.email, PASSWORD);
          expect(own.status).toBe(200);
        } finally {
          await guarded.stop();
        }
      });

      test("one address trying many emails is stopped after its attempts are spent; another address is not", async () => {
        const sprayer = freshLoopbackAddress();
        for (let attempt = 0; attempt < 3; attempt++) {
          expect((await wrongPasswordFrom(api, sprayer)).status).toBe(401);
        }
        await expectRateLimited(await wrongPasswordFrom(api, sprayer));
        expect((await wrongPasswordFrom(api, freshLoopbackAddress())).status).toBe(401);
      });
    });
  });
}

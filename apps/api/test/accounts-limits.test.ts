import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { request } from "node:http";
import { totpCodeFromUrl } from "@platform/core/testing";
import { PASSWORD, readBody, signUp, uniqueEmail } from "./accounts-helpers.ts";
import { enableTotp, TOTP_STEP_MS } from "./accounts-totp.ts";
import { brokerVariants, startTestApi, type TestApi } from "./harness.ts";

/** A loopback address of this run's own (all of 127.0.0.0/8 reaches the server). */
function freshLoopbackAddress(): string {
  const octet = () => 1 + Math.floor(Math.random() * 254);
  return `127.${octet()}.${octet()}.${octet()}`;
}

/** A JSON POST sent from `localAddress`, which the server sees as the client's IP. */
function postFrom(api: TestApi, localAddress: string, path: string, json: unknown): Promise<Response> {
  const url = new URL(`${api.url}${path}`);
  const body = JSON.stringify(json);
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

function signInFrom(api: TestApi, localAddress: string, email: string, password: string): Promise<Response> {
  return postFrom(api, localAddress, "/accounts/auth-with-password", { email, password });
}

async function expectRateLimited(response: Response): Promise<void> {
  expect(response.status).toBe(429);
  expect(await readBody(response)).toEqual({ error: "too many attempts; try again later" });
  const retryAfter = Number(response.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(900);
}

const WRONG = "wrong password here";

// The tallies live in the broker: once on the database's own adapter, once on Redis.
for (const { backend, redis, label, skip } of brokerVariants()) {
  describe.skipIf(Boolean(skip))(`accounts: sign-in limits on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    describe("per email and address", () => {
      let api: TestApi;
      beforeAll(async () => {
        api = await startTestApi({ backend, redis, env: { LOGIN_FAILURES_PER_PAIR: "3" } });
      }, 60_000);
      afterAll(() => api.stop());

      test("failures lock the email out from that address only; the owner signs in from another", async () => {
        const victim = await signUp(api, "pair-victim");
        const attacker = freshLoopbackAddress();
        for (let attempt = 0; attempt < 3; attempt++) {
          expect((await signInFrom(api, attacker, victim.email, WRONG)).status).toBe(401);
        }
        for (let attempt = 0; attempt < 3; attempt++) {
          await expectRateLimited(await signInFrom(api, attacker, victim.email, WRONG));
        }
        await expectRateLimited(await signInFrom(api, attacker, victim.email, PASSWORD));
        expect((await signInFrom(api, freshLoopbackAddress(), victim.email, PASSWORD)).status).toBe(200);
        // The attacker's address may still sign in as someone else.
        const other = await signUp(api, "pair-other");
        expect((await signInFrom(api, attacker, other.email, PASSWORD)).status).toBe(200);
      });

      test("sign-ups that find an email taken count as failed sign-ins of that email from that address", async () => {
        const victim = await signUp(api, "taken");
        const prober = freshLoopbackAddress();
        const probe = () =>
          postFrom(api, prober, "/accounts/signup", { email: victim.email, password: PASSWORD, account_name: "probe" });
        for (let attempt = 0; attempt < 3; attempt++) expect((await probe()).status).toBe(409);
        // The pair is spent: sign-up no longer says whether the email is taken, and neither does sign-in.
        await expectRateLimited(await probe());
        await expectRateLimited(await signInFrom(api, prober, victim.email, WRONG));
        // The address may still sign up a new email, and the owner signs in from elsewhere.
        const fresh = await postFrom(api, prober, "/accounts/signup", {
          email: uniqueEmail("fresh"),
          password: PASSWORD,
          account_name: "fresh",
        });
        expect(fresh.status).toBe(200);
        expect((await signInFrom(api, freshLoopbackAddress(), victim.email, PASSWORD)).status).toBe(200);
      });

      test("successful sign-ins never count towards a limit", async () => {
        const user = await signUp(api, "pair-often");
        const address = freshLoopbackAddress();
        for (let attempt = 0; attempt < 12; attempt++) {
          expect((await signInFrom(api, address, user.email, PASSWORD)).status).toBe(200);
        }
      });

      test("a successful sign-in clears the failures of its email and address", async () => {
        const user = await signUp(api, "pair-clear");
        const address = freshLoopbackAddress();
        for (let round = 0; round < 3; round++) {
          for (let attempt = 0; attempt < 2; attempt++) {
            expect((await signInFrom(api, address, user.email, WRONG)).status).toBe(401);
          }
          expect((await signInFrom(api, address, user.email, PASSWORD)).status).toBe(200);
        }
      });

      test("guesses at the second factor are limited per email and address too", async () => {
        const owner = await signUp(api, "pair-mfa");
        const totp = await enableTotp(api, owner.auth.auth_token);
        const guesser = freshLoopbackAddress();
        const mfaToken = async (address: string) =>
          (await readBody(await signInFrom(api, address, owner.email, PASSWORD))).data.mfa_token;
        const token = await mfaToken(guesser);
        const guess = () =>
          postFrom(api, guesser, "/accounts/auth-with-mfa", { mfa_token: token, totp_code: "000000" });
        for (let attempt = 0; attempt < 3; attempt++) expect((await guess()).status).toBe(401);
        await expectRateLimited(await guess());

        const elsewhere = freshLoopbackAddress();
        const completed = await postFrom(api, elsewhere, "/accounts/auth-with-mfa", {
          mfa_token: await mfaToken(elsewhere),
          totp_code: totpCodeFromUrl(totp.otpauthUrl, totp.confirmedAt + TOTP_STEP_MS),
        });
        expect(completed.status).toBe(200);
      });
    });

    describe("per address and per email", () => {
      let api: TestApi;
      beforeAll(async () => {
        api = await startTestApi({
          backend,
          redis,
          env: { LOGIN_FAILURES_PER_IP: "3", LOGIN_FAILURES_PER_EMAIL: "3", LOGIN_SLOWDOWN_MS: "20" },
          captureLogs: "info",
        });
      }, 60_000);
      afterAll(() => api.stop());

      test("one address trying many emails is stopped once its failures are spent; another address is not", async () => {
        const sprayer = freshLoopbackAddress();
        for (let attempt = 0; attempt < 3; attempt++) {
          expect((await signInFrom(api, sprayer, uniqueEmail("spray"), WRONG)).status).toBe(401);
        }
        await expectRateLimited(await signInFrom(api, sprayer, uniqueEmail("spray"), WRONG));
        expect((await signInFrom(api, freshLoopbackAddress(), uniqueEmail("spray"), WRONG)).status).toBe(401);
      });

      test("failures of one email from many addresses slow its sign-ins down but never refuse the owner", async () => {
        const victim = await signUp(api, "slow-victim");
        const attackers = Array.from({ length: 6 }, freshLoopbackAddress);
        for (const address of attackers) {
          expect((await signInFrom(api, address, victim.email, WRONG)).status).toBe(401);
        }
        expect(api.logs()).toContain("sign-in slowed down for an email");
        // Neither from a fresh address nor from one that failed once (its pair is not spent).
        expect((await signInFrom(api, freshLoopbackAddress(), victim.email, PASSWORD)).status).toBe(200);
        expect((await signInFrom(api, attackers[0] ?? "127.0.0.1", victim.email, PASSWORD)).status).toBe(200);
      });
    });
  });
}

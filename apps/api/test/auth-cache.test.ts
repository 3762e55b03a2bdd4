import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bearer, logInFully, readBody, signUp } from "./accounts-helpers.ts";
import { addMember } from "./accounts-members.ts";
import { runModes, startPeerApi, startTestApi, type TestApi } from "./harness.ts";

/**
 * Authentication is cached per process; revocation must still reach every process at once.
 * Two API servers of one deployment (one database, one broker), each with its own cache:
 * whatever one revokes, it refuses on the very next request, and the other as soon as the
 * revocation's notification arrives (milliseconds; REVOCATION_REACHES_MS at most), although
 * it had verified (and cached) that credential a moment before.
 */

/** How long a revocation takes to reach the other processes of a deployment at most (see docs/security.md). */
const REVOCATION_REACHES_MS = 2000;

for (const { backend, redis, label: name, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(
    `revocation across API processes on ${name}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let one: TestApi;
      let two: TestApi;
      beforeAll(async () => {
        // Reuse of a refresh token revokes at once (no grace), so the test needs no waiting.
        one = await startTestApi({ backend, redis, env: { REFRESH_REUSE_GRACE_S: "0" } });
        two = await startPeerApi(one);
      }, 60_000);
      afterAll(async () => {
        await two?.stop();
        await one?.stop();
      });

      /** Calls an authenticated operation on a server; twice, so the second answer comes from its cache. */
      async function warm(api: TestApi, headers: Record<string, string>): Promise<void> {
        for (let i = 0; i < 2; i++) expect((await api.request("/accounts/users", { headers })).status).toBe(200);
      }

      async function refused(api: TestApi, headers: Record<string, string>): Promise<void> {
        const response = await api.request("/accounts/users", { headers });
        expect(response.status).toBe(401);
        expect(await readBody(response)).toEqual({ error: "invalid credential" });
      }

      /**
       * Refused by a process other than the revoking one once the revocation's notification has
       * reached it: within REVOCATION_REACHES_MS (docs/security.md), polled rather than raced.
       */
      async function refusedElsewhere(api: TestApi, headers: Record<string, string>): Promise<void> {
        const deadline = Date.now() + REVOCATION_REACHES_MS;
        while (Date.now() < deadline) {
          if ((await api.request("/accounts/users", { headers })).status === 401) break;
          await Bun.sleep(20);
        }
        await refused(api, headers);
      }

      test("a logout through one server ends the session on the other at once", async () => {
        const owner = await signUp(one, "cache-logout");
        const session = bearer(owner.auth.auth_token);
        await warm(two, session);
        const logout = await one.request("/accounts/logout", {
          method: "POST",
          headers: session,
          json: { refresh_token: owner.auth.refresh_token },
        });
        expect(logout.status).toBe(200);
        await refused(one, session);
        await refusedElsewhere(two, session);
      });

      test("a reused refresh token revokes the session in every process", async () => {
        const owner = await signUp(one, "cache-reuse");
        const refreshed = await readBody(
          await two.request("/accounts/refresh", { method: "POST", json: { refresh_token: owner.auth.refresh_token } }),
        );
        const current = bearer(refreshed.data.auth_token);
        await warm(one, current);
        // Presenting the spent token again ends the whole session, in every process.
        const reuse = await two.request("/accounts/refresh", {
          method: "POST",
          json: { refresh_token: owner.auth.refresh_token },
        });
        expect(reuse.status).toBe(401);
        await refusedElsewhere(one, current);
      });

      test("removing a user through one server refuses their token and their API key on the other", async () => {
        const owner = await signUp(one, "cache-remove");
        const member = await addMember(one, owner.auth.auth_token, "cache-member", "member");
        const keyResponse = await one.request("/accounts/api-keys", {
          method: "POST",
          headers: bearer(member.auth.auth_token),
          json: { name: "member key" },
        });
        const key = { "x-api-key": (await readBody(keyResponse)).data.key as string };
        await warm(two, bearer(member.auth.auth_token));
        await warm(two, key);
        const removed = await one.request("/accounts/remove-user", {
          method: "DELETE",
          headers: bearer(owner.auth.auth_token),
          json: { email: member.email },
        });
        expect(removed.status).toBe(200);
        await refusedElsewhere(two, bearer(member.auth.auth_token));
        await refusedElsewhere(two, key);
      });

      test("a deleted API key is refused on the other server at once; other keys keep working", async () => {
        const owner = await signUp(one, "cache-key");
        const token = bearer(owner.auth.auth_token);
        const create = async (name: string) =>
          (await readBody(await one.request("/accounts/api-keys", { method: "POST", headers: token, json: { name } })))
            .data as { id: string; key: string };
        const doomed = await create("doomed");
        const kept = await create("kept");
        await warm(two, { "x-api-key": doomed.key });
        await warm(two, { "x-api-key": kept.key });
        expect(
          (await one.request(`/accounts/api-keys/${doomed.id}`, { method: "DELETE", headers: token })).status,
        ).toBe(200);
        await refusedElsewhere(two, { "x-api-key": doomed.key });
        await warm(two, { "x-api-key": kept.key });
        // The session of the owner was never touched.
        expect((await logInFully(two, owner.email)).auth_token).toBeString();
        await warm(two, token);
      });
    },
  );
}

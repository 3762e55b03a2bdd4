import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { bearer, readBody, signUp } from "./accounts-helpers.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(
    `accounts: concurrent refreshes on ${label}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      let api: TestApi;
      beforeAll(async () => {
        api = await startTestApi({ backend, redis });
      }, 60_000);
      afterAll(() => api.stop());

      const refresh = (refreshToken: string) =>
        api.request("/accounts/refresh", { method: "POST", json: { refresh_token: refreshToken } });
      const works = async (authToken: string) =>
        (await api.request("/accounts/users", { headers: bearer(authToken) })).status;

      test("two refreshes with the same token at the same moment both get working tokens; the session stays", async () => {
        for (let attempt = 0; attempt < 6; attempt++) {
          const { auth } = await signUp(api, "twin-refresh");
          const answers = await Promise.all([refresh(auth.refresh_token), refresh(auth.refresh_token)]);
          expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
          const results = await Promise.all(answers.map(async (answer) => (await readBody(answer)).data));
          for (const result of results) {
            expect(await works(result.auth_token)).toBe(200);
            const next = await refresh(result.refresh_token);
            expect(next.status).toBe(200);
            expect(await works((await readBody(next)).data.auth_token)).toBe(200);
          }
          expect(await works(auth.auth_token)).toBe(200);
        }
      });

      test("presenting an exchanged refresh token after the grace still revokes the whole session", async () => {
        const { auth } = await signUp(api, "late-reuse");
        const first = await readBody(await refresh(auth.refresh_token));
        // The exchange happened a minute ago, well past REFRESH_REUSE_GRACE_S (10 s).
        await api.services.db
          .updateTable("refresh_tokens")
          .set({ rotated_at: new Date(Date.now() - 60_000) })
          .where("token_hash", "=", createHash("sha256").update(auth.refresh_token).digest("hex"))
          .execute();
        const reused = await refresh(auth.refresh_token);
        expect(reused.status).toBe(401);
        expect(await readBody(reused)).toEqual({ error: "refresh token was already used; sign in again" });
        expect(await works(first.data.auth_token)).toBe(401);
        expect((await refresh(first.data.refresh_token)).status).toBe(401);
      });
    },
  );
}

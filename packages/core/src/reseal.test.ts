import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import type { DatabaseHandle } from "@platform/db";
import { databaseBackends, openTestDatabase } from "@platform/db/testing";
import { totpSealingContext } from "./accounts/totp.ts";
import { findFlowByWebhookId, flowSecretSealingContext } from "./flows/webhook-flows.ts";
import { resealAll } from "./reseal.ts";
import { createSealer, parseSecretsKeys } from "./sealing.ts";
import { sealedByFirstRelease } from "./sealing-fixtures.ts";
import { putSecret, readSecret } from "./secrets/secrets.ts";

const newKey = () => randomBytes(32).toString("base64url");

for (const { backend, skip } of databaseBackends()) {
  describe.skipIf(Boolean(skip))(
    `re-sealing under the current key on ${backend}${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      const legacyKey = newKey();
      const oldKey = newKey();
      const newestKey = newKey();
      const before = createSealer(parseSecretsKeys(`old:${oldKey}`));
      const rotated = createSealer(parseSecretsKeys(`new:${newestKey},old:${oldKey},${legacyKey}`));
      const newOnly = createSealer(parseSecretsKeys(`new:${newestKey}`));
      const secretsByAccount = {
        "acc-1": { "db-password": "pg-secret-1", "stripe-key": "sk_1", "a-third": "3", "b-fourth": "4", c5: "5" },
        "acc-2": { "db-password": "pg-secret-2" },
      };
      let database: DatabaseHandle;

      beforeAll(async () => {
        database = await openTestDatabase(backend);
        const { db } = database;
        for (const id of ["acc-1", "acc-2"]) {
          await db
            .insertInto("accounts")
            .values({ id, name: id, display_name: id, root_email: `${id}@x.io` })
            .execute();
        }
        for (const [accountId, secrets] of Object.entries(secretsByAccount)) {
          for (const [key, value] of Object.entries(secrets)) {
            await putSecret({ db, sealer: before }, accountId, key, value);
          }
        }
        // A secret sealed by a key nobody lists any more.
        await putSecret({ db, sealer: createSealer(parseSecretsKeys(`lost:${newKey()}`)) }, "acc-2", "orphan", "gone");
        // TOTP secrets: one from the first release (v1, no key id), one under the old key.
        for (const id of ["user-1", "user-2"]) {
          await db
            .insertInto("users")
            .values({ id, email: `${id}@x.io`, password_hash: "h", display_name: id })
            .execute();
        }
        await db
          .insertInto("user_totp")
          .values([
            {
              user_id: "user-1",
              secret: sealedByFirstRelease(legacyKey, "JBSWY3DPEHPK3PXP", totpSealingContext("user-1")),
            },
            { user_id: "user-2", secret: before.seal("KRSXG5CTMVRXEZLU", totpSealingContext("user-2")) },
          ])
          .execute();
        // Flows' signing secrets: two under the old key, one flow without a secret.
        const flows = [
          { id: "00000000-0000-4000-8000-000000000001", secret: "whsec_one" },
          { id: "00000000-0000-4000-8000-000000000002", secret: "whsec_two" },
          { id: "00000000-0000-4000-8000-000000000003", secret: null },
        ];
        for (const [index, { id, secret }] of flows.entries()) {
          await db
            .insertInto("flows")
            .values({
              id,
              account_id: "acc-1",
              name: `flow ${index}`,
              description: "",
              active: true,
              trigger: JSON.stringify({ type: "webhook", access: secret ? "signature" : "public" }),
              signing_secret: secret === null ? null : before.seal(secret, flowSecretSealingContext(id)),
              webhook_id: `hook-${index}`,
              revision: 1,
            })
            .execute();
        }
      }, 60_000);
      afterAll(() => database.close());

      test("every readable value moves to the current key, in batches, and opens under it alone", async () => {
        const reports = await resealAll(database.db, rotated, { batchSize: 2 });
        expect(reports).toEqual([
          { table: "secrets", column: "value", resealed: 6, unreadable: 1 },
          { table: "user_totp", column: "secret", resealed: 2, unreadable: 0 },
          { table: "flows", column: "signing_secret", resealed: 2, unreadable: 0 },
        ]);
        const db = database.db;
        for (const [accountId, secrets] of Object.entries(secretsByAccount)) {
          for (const [key, value] of Object.entries(secrets)) {
            expect(await readSecret({ db, sealer: newOnly }, accountId, key)).toBe(value);
          }
        }
        const totp = await db.selectFrom("user_totp").select(["user_id", "secret"]).orderBy("user_id").execute();
        expect(totp.map((row) => row.secret.slice(0, 7))).toEqual(["v2.new.", "v2.new."]);
        expect(totp.map((row) => newOnly.open(row.secret, totpSealingContext(row.user_id)))).toEqual([
          "JBSWY3DPEHPK3PXP",
          "KRSXG5CTMVRXEZLU",
        ]);
        for (const [index, secret] of [
          ["0", "whsec_one"],
          ["1", "whsec_two"],
          ["2", null],
        ]) {
          const flow = await findFlowByWebhookId({ db, sealer: newOnly }, `hook-${index}`);
          expect(flow?.signingSecret).toBe(secret ?? null);
        }
        const orphan = await db
          .selectFrom("secrets")
          .select("value")
          .where("key", "=", "orphan")
          .executeTakeFirstOrThrow();
        expect(orphan.value).toStartWith("v2.lost.");
      });

      test("a second run finds nothing left to do but the value no key opens", async () => {
        const unchanged = await database.db.selectFrom("secrets").select(["key", "value"]).orderBy("key").execute();
        expect(await resealAll(database.db, rotated, { batchSize: 2 })).toEqual([
          { table: "secrets", column: "value", resealed: 0, unreadable: 1 },
          { table: "user_totp", column: "secret", resealed: 0, unreadable: 0 },
          { table: "flows", column: "signing_secret", resealed: 0, unreadable: 0 },
        ]);
        expect(await database.db.selectFrom("secrets").select(["key", "value"]).orderBy("key").execute()).toEqual(
          unchanged,
        );
      });
    },
  );
}

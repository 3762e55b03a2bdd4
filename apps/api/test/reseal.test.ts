import { afterAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSealer, loadSecretsKeys } from "@platform/core";
import { type DatabaseHandle, migrateToLatest, openDatabase } from "@platform/db";
import { createScratchPostgres, databaseBackends } from "@platform/db/testing";

const script = new URL("../src/reseal.ts", import.meta.url).pathname;
const newKey = () => randomBytes(32).toString("base64url");
const dataDirs: string[] = [];
afterAll(() => {
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

async function runReseal(env: Record<string, string>) {
  const { PATH = "", HOME = "" } = process.env;
  const child = Bun.spawn(["bun", script], { env: { PATH, HOME, ...env }, stdout: "pipe", stderr: "pipe" });
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  return {
    code,
    reports: stdout
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line)),
    stderr,
  };
}

/** One account holding one secret, sealed as the API seals it under `keys`. */
async function seedSecret(database: DatabaseHandle, keys: string, plaintext: string): Promise<void> {
  await migrateToLatest(database.db);
  const sealer = createSealer(await loadSecretsKeys(keys, "/nonexistent"));
  await database.db
    .insertInto("accounts")
    .values({ id: "acc", name: "acc", display_name: "acc", root_email: "a@x.io" })
    .execute();
  await database.db
    .insertInto("secrets")
    .values({ account_id: "acc", key: "db-password", value: sealer.seal(plaintext, "secret:acc:db-password") })
    .execute();
}

const report = (resealed: number, unreadable: number) => [
  { table: "secrets", column: "value", resealed, unreadable },
  { table: "user_totp", column: "secret", resealed: 0, unreadable: 0 },
  { table: "flows", column: "signing_secret", resealed: 0, unreadable: 0 },
];

describe.skipIf(Boolean(databaseBackends()[1]?.skip))("bun run secrets:reseal on PostgreSQL", () => {
  test("re-seals under the first key, says when a value opens under no listed key, and exits 1 then", async () => {
    const scratch = await createScratchPostgres();
    try {
      const oldKey = newKey();
      const database = await openDatabase({ kind: "postgres", url: scratch.url, poolSize: 1 });
      await seedSecret(database, `old:${oldKey}`, "s3cret");
      await database.close();

      const rotated = await runReseal({ DATABASE_URL: scratch.url, SECRETS_KEY: `new:${newKey()},old:${oldKey}` });
      expect(rotated).toEqual({ code: 0, reports: report(1, 0), stderr: "" });

      const withoutTheKey = await runReseal({ DATABASE_URL: scratch.url, SECRETS_KEY: `other:${newKey()}` });
      expect(withoutTheKey.code).toBe(1);
      expect(withoutTheKey.reports).toEqual(report(0, 1));
      expect(withoutTheKey.stderr.trim()).toBe(
        "1 sealed value(s) open under no key SECRETS_KEY lists; they were left as they are. List the key that sealed them and run again.",
      );
    } finally {
      await scratch.drop();
    }
  });
});

describe("bun run secrets:reseal in embedded mode", () => {
  test("uses the key list kept in DATA_DIR, and refuses a data directory a running server holds", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "reseal-"));
    dataDirs.push(dataDir);
    const generated = newKey();
    const database = await openDatabase({ kind: "pglite", dataDir });
    await seedSecret(database, generated, "s3cret");
    await database.close();
    // The operator rotated by putting a new key in front of the generated one.
    writeFileSync(join(dataDir, "secrets-key"), `next:${newKey()},${generated}\n`);

    expect(await runReseal({ DATA_DIR: dataDir })).toEqual({ code: 0, reports: report(1, 0), stderr: "" });
    expect(await runReseal({ DATA_DIR: dataDir })).toEqual({ code: 0, reports: report(0, 0), stderr: "" });

    // This test process stands in for a server that has the directory open.
    writeFileSync(join(dataDir, "platform.lock"), String(process.pid));
    const held = await runReseal({ DATA_DIR: dataDir });
    expect(held.code).toBe(1);
    expect(held.stderr.trim()).toStartWith(`reseal failed: `);
    expect(held.stderr).toContain(`data directory ${dataDir} is in use by process ${process.pid}`);
    rmSync(join(dataDir, "platform.lock"));
  }, 60_000);

  test("a malformed SECRETS_KEY stops it before it touches anything", async () => {
    const result = await runReseal({ DATA_DIR: "/nonexistent", SECRETS_KEY: "short" });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      "invalid configuration: SECRETS_KEY: must be a 32-byte base64url key (43 characters) or kid:key[,kid:key...]",
    );
  });
});

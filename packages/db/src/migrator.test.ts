import { describe, expect, test } from "bun:test";
import { type Kysely, sql } from "kysely";
import { Migrator } from "kysely/migration";
import pg from "pg";
import { openDatabase } from "./connection.ts";
import { migrations } from "./migrations/index.ts";
import { migrateToLatest } from "./migrator.ts";
import type { Database } from "./schema.ts";
import { createScratchPostgres, databaseBackends, openTestDatabase, testEnv } from "./testing.ts";

const cli = new URL("./cli.ts", import.meta.url).pathname;

for (const { backend, skip } of databaseBackends()) {
  describe.skipIf(Boolean(skip))(`migrations on ${backend}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    test("a migrated database has every table, and migrating again applies nothing", async () => {
      const handle = await openTestDatabase(backend);
      try {
        const tables = await sql<{ table_name: string }>`
          select table_name from information_schema.tables where table_schema = 'public'`.execute(handle.db);
        const names = tables.rows.map((r) => r.table_name);
        expect(names).toEqual(
          expect.arrayContaining([
            "accounts",
            "users",
            "memberships",
            "secrets",
            "node_templates",
            "flows",
            "flow_revisions",
          ]),
        );
        expect(await migrateToLatest(handle.db)).toEqual([]);
      } finally {
        await handle.close();
      }
    });

    test("the schema enforces lower-case emails and known roles", async () => {
      const handle = await openTestDatabase(backend);
      try {
        await expect(
          handle.db
            .insertInto("users")
            .values({ id: "u1", email: "A@x.io", password_hash: "h", display_name: "A" })
            .execute(),
        ).rejects.toThrow(/users_email_lower_case/);
        await handle.db
          .insertInto("users")
          .values({ id: "u1", email: "a@x.io", password_hash: "h", display_name: "A" })
          .execute();
        await handle.db
          .insertInto("accounts")
          .values({ id: "a1", name: "acme", display_name: "Acme", root_email: "a@x.io" })
          .execute();
        await expect(
          handle.db
            .insertInto("memberships")
            .values({ account_id: "a1", user_id: "u1", role: "emperor" as never })
            .execute(),
        ).rejects.toThrow(/memberships_role/);
      } finally {
        await handle.close();
      }
    });

    test("notifications reach a listener and stop after unlisten", async () => {
      const handle = await openTestDatabase(backend);
      try {
        const received: string[] = [];
        const unlisten = await handle.listen("test_channel", (p) => received.push(p));
        await handle.notify("test_channel", "one");
        await waitFor(() => received.length === 1);
        await unlisten();
        await handle.notify("test_channel", "two");
        await Bun.sleep(100);
        expect(received).toEqual(["one"]);
      } finally {
        await handle.close();
      }
    });
  });
}

describe.skipIf(!databaseBackends().find((b) => b.backend === "postgres" && !b.skip))(
  "concurrent start-up on postgres",
  () => {
    test("two processes migrating one database at once apply each migration exactly once", async () => {
      const scratch = await createScratchPostgres();
      try {
        const run = () =>
          Bun.spawn(["bun", cli, "migrate"], {
            env: { ...process.env, DATABASE_URL: scratch.url },
            stdout: "pipe",
            stderr: "pipe",
          });
        const [a, b] = [run(), run()];
        const [outA, outB] = (await Promise.all([new Response(a.stdout).json(), new Response(b.stdout).json()])) as {
          applied: string[];
        }[];
        expect([await a.exited, await b.exited]).toEqual([0, 0]);
        const applied = [...(outA?.applied ?? []), ...(outB?.applied ?? [])].sort();
        expect(applied).toEqual(Object.keys(migrations).sort());

        const handle = await openDatabase({ kind: "postgres", url: scratch.url, poolSize: 1 });
        const rows = await sql<{ n: number }>`select count(*)::int as n from kysely_migration`.execute(handle.db);
        await handle.close();
        expect(rows.rows[0]?.n).toBe(Object.keys(migrations).length);
      } finally {
        await scratch.drop();
      }
    });
  },
);

describe.skipIf(!databaseBackends().find((b) => b.backend === "postgres" && !b.skip))(
  "gateway subjects that differ only by case, saved before they had to differ",
  () => {
    test("the oldest keeps its subject, the others get a suffix, and no two can differ only by case again", async () => {
      const scratch = await createScratchPostgres();
      const handle = await openDatabase({ kind: "postgres", url: scratch.url, poolSize: 1 });
      try {
        const migrator = new Migrator({ db: handle.db, provider: { getMigrations: async () => migrations } });
        const before = await migrator.migrateTo("20261123120000_run_leases");
        expect(before.error).toBeUndefined();
        await sql`insert into accounts (id, name, display_name, root_email) values ('a1', 'a', 'A', 'a@x.io'), ('a2', 'b', 'B', 'b@x.io')`.execute(
          handle.db,
        );
        const gateway = (id: string, account: string, subject: string, created: string) => sql`
          insert into gateways (id, account_id, subject, name, description, active, timeout_ms, limit_requests, limit_seconds, type, created_at)
          values (${id}::uuid, ${account}, ${subject}, 'g', '', true, 1000, 1, 1, 'http', ${created}::timestamptz)`;
        await gateway("0194ab12-0000-7000-8000-000000000001", "a1", "ashop", "2026-11-01T00:00:00Z").execute(handle.db);
        await gateway("0194cd34-0000-7000-8000-000000000002", "a2", "ASHOP", "2026-11-02T00:00:00Z").execute(handle.db);

        await migrateToLatest(handle.db);
        const subjects = await sql<{ account_id: string; subject: string }>`
          select account_id, subject from gateways order by created_at`.execute(handle.db);
        expect(subjects.rows).toEqual([
          { account_id: "a1", subject: "ashop" },
          { account_id: "a2", subject: "ASHOP-0194cd34" },
        ]);
        await expect(
          gateway("0194ef56-0000-7000-8000-000000000003", "a2", "AShop", "2026-11-03T00:00:00Z").execute(handle.db),
        ).rejects.toThrow(/gateways_subject_any_case/);
      } finally {
        await handle.close();
        await scratch.drop();
      }
    });
  },
);

describe.skipIf(!databaseBackends().find((b) => b.backend === "postgres" && !b.skip))(
  "what accounts keep, saved before it was counted",
  () => {
    test("events and revisions already there count as the text of their JSON, per account", async () => {
      const scratch = await createScratchPostgres();
      const handle = await openDatabase({ kind: "postgres", url: scratch.url, poolSize: 1 });
      try {
        const migrator = new Migrator({ db: handle.db, provider: { getMigrations: async () => migrations } });
        expect((await migrator.migrateTo("20261127030000_broker_lanes")).error).toBeUndefined();
        await sql`insert into accounts (id, name, display_name, root_email) values ('a1', 'a', 'A', 'a@x.io'), ('a2', 'b', 'B', 'b@x.io')`.execute(
          handle.db,
        );
        const flow = "0194ab12-0000-7000-8000-000000000001";
        await sql`
          insert into flows (id, account_id, name, description, active, trigger, webhook_id, revision)
          values (${flow}::uuid, 'a1', 'f', '', true, '{}', 'w1', 2)`.execute(handle.db);
        await sql`
          insert into flow_revisions (flow_id, revision, trigger, steps, concurrency)
          values (${flow}::uuid, 1, '{"type": "webhook"}', '[{"name": "s"}]', null),
            (${flow}::uuid, 2, '{"type": "webhook"}', '[]', '{"limit": 1}')`.execute(handle.db);
        await sql`
          insert into run_events (account_id, key, data)
          values ('a1', 'k1', '{"a": 1}'), ('a2', 'k22', '"é"'), ('a2', 'k3', 'null')`.execute(handle.db);

        await migrateToLatest(handle.db);
        const kept = await sql<{ account_id: string; event_bytes: string; flow_revision_bytes: string }>`
          select account_id, event_bytes::text, flow_revision_bytes::text from account_storage order by account_id`.execute(
          handle.db,
        );
        // Revisions: {"type": "webhook"} (19) twice, [{"name": "s"}] (15), [] (2), {"limit": 1} (12), on_failure [] (2) twice.
        // Events: k1 and {"a": 1} (2 + 8); k22 and "é" (3 + 4); k3 and null (2 + 4).
        expect(kept.rows).toEqual([
          { account_id: "a1", event_bytes: "10", flow_revision_bytes: String(19 + 15 + 2 + 19 + 2 + 12 + 2) },
          { account_id: "a2", event_bytes: "13", flow_revision_bytes: "0" },
        ]);
        const bytes = await sql<{ key: string; bytes: number }>`select key, bytes from run_events order by key`.execute(
          handle.db,
        );
        expect(bytes.rows).toEqual([
          { key: "k1", bytes: 10 },
          { key: "k22", bytes: 7 },
          { key: "k3", bytes: 6 },
        ]);
      } finally {
        await handle.close();
        await scratch.drop();
      }
    });
  },
);

describe.skipIf(!databaseBackends().find((b) => b.backend === "postgres" && !b.skip))(
  "notifications on postgres when the listener cannot connect",
  () => {
    test("a listen that failed hears nothing later; one made after recovery hears each message once", async () => {
      const scratch = await createScratchPostgres();
      const name = new URL(scratch.url).pathname.slice(1);
      const handle = await openDatabase({ kind: "postgres", url: scratch.url, poolSize: 1 });
      try {
        await handle.ping(); // the pool keeps this connection for notify
        await admin(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
        const failed: string[] = [];
        await expect(handle.listen("recovering", (p) => failed.push(p))).rejects.toThrow();

        await admin(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
        const heard: string[] = [];
        await handle.listen("recovering", (p) => heard.push(p));
        await handle.notify("recovering", "after");
        await waitFor(() => heard.length === 1);
        await Bun.sleep(100);
        expect(heard).toEqual(["after"]);
        expect(failed).toEqual([]);
      } finally {
        await handle.close();
        await scratch.drop();
      }
    });
  },
);

/** Runs one statement on the test server's own database (ALTER DATABASE cannot target the current one). */
async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: testEnv.DATABASE_URL });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

async function waitFor(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await Bun.sleep(10);
  }
}

/** A flow of account a1 in a scratch PostgreSQL database migrated up to `migration`, dropped after `body`. */
async function withFlowAt(migration: string, body: (db: Kysely<Database>, flow: string) => Promise<void>) {
  const scratch = await createScratchPostgres();
  const handle = await openDatabase({ kind: "postgres", url: scratch.url, poolSize: 1 });
  try {
    const migrator = new Migrator({ db: handle.db, provider: { getMigrations: async () => migrations } });
    expect((await migrator.migrateTo(migration)).error).toBeUndefined();
    await sql`insert into accounts (id, name, display_name, root_email) values ('a1', 'a', 'A', 'a@x.io')`.execute(
      handle.db,
    );
    const flow = "0194ab12-0000-7000-8000-000000000001";
    await sql`
      insert into flows (id, account_id, name, description, active, trigger, webhook_id, revision)
      values (${flow}::uuid, 'a1', 'f', '', true, '{}', 'w1', 1)`.execute(handle.db);
    await body(handle.db, flow);
  } finally {
    await handle.close();
    await scratch.drop();
  }
}

describe.skipIf(!databaseBackends().find((b) => b.backend === "postgres" && !b.skip))(
  "throttle turns given by earlier releases",
  () => {
    test("each key's turns are numbered in the order of their times", async () => {
      await withFlowAt("20261205000100_singleton_judge", async (db, flow) => {
        // Turns of key "x" given out of the order of the runs' ids, one of key "y", and a run with none.
        const turns = [
          { key: "x", at: "2026-11-28T10:00:02Z" },
          { key: "x", at: "2026-11-28T10:00:00Z" },
          { key: "y", at: "2026-11-28T10:00:05Z" },
          { key: "x", at: "2026-11-28T10:00:01Z" },
          { key: null, at: null },
        ];
        const ids = turns.map(() => Bun.randomUUIDv7());
        for (const [i, turn] of turns.entries()) {
          await sql`
            insert into runs (id, account_id, flow_id, revision, status, trigger, throttle_key, throttle_at)
            values (${ids[i]}::uuid, 'a1', ${flow}::uuid, 1, 'succeeded', '{}', ${turn.key}, ${turn.at}::timestamptz)`.execute(
            db,
          );
        }

        await migrateToLatest(db);
        const numbered = await sql<{ id: string; throttle_seq: string | null }>`
          select id, throttle_seq::text from runs where id = any(${ids}::uuid[])`.execute(db);
        const seqOf = new Map(numbered.rows.map((row) => [row.id, row.throttle_seq]));
        expect(ids.map((id) => seqOf.get(id))).toEqual(["3", "1", "1", "2", null]);
      });
    });

    test("the turns of the last day are carried over to their table, so the throttle holds across the upgrade", async () => {
      await withFlowAt("20261208000100_slot_take", async (db, flow) => {
        // Turns of key "x" given two days, an hour and no time ago, and one a minute ahead.
        const minutesAgo = [2880, 60, 0, -1];
        for (const [i, minutes] of minutesAgo.entries()) {
          await sql`
            insert into runs (id, account_id, flow_id, revision, status, trigger, throttle_key, throttle_at, throttle_seq)
            values (${Bun.randomUUIDv7()}::uuid, 'a1', ${flow}::uuid, 1, 'succeeded', '{}', 'x',
              now() - ${minutes} * interval '1 minute', ${i + 1})`.execute(db);
        }

        await migrateToLatest(db);
        const carried = await sql<{ key: string; seq: number }>`
          select throttle_key as key, seq from throttle_turns where flow_id = ${flow}::uuid order by seq`.execute(db);
        expect(carried.rows).toEqual([
          { key: "x", seq: 2 },
          { key: "x", seq: 3 },
          { key: "x", seq: 4 },
        ]);
      });
    });
  },
);

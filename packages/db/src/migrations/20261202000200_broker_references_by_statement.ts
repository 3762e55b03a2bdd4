import { type Kysely, sql } from "kysely";

/**
 * The PostgreSQL broker's hot tables keep their references by statement, as runs do (see
 * 20261202000100_run_references_by_statement): a foreign key checked each stream entry's
 * stream and each pending delivery's entry and group with a query of its own, three per run
 * queued on the embedded deployment's run stream. Now:
 *
 * - an entry is inserted only by the statement that upserts (and so locks) its stream's row
 *   to number it (broker/postgres/append-batches.ts, lanes.ts);
 * - a pending delivery only by the statement that locks its group's row and holds its entry
 *   (`for key share`) until it commits (broker/postgres/streams.ts), so a trim or a group's
 *   removal waits for it;
 * - what the foreign keys cascaded the triggers below delete, a statement at a time: a
 *   stream's entries with the stream, and the pending deliveries of the entries and of the
 *   groups deleted. A stream's groups keep their foreign key (a group is made once, not per
 *   entry).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table broker_stream_entries drop constraint broker_stream_entries_scope_stream_fkey`.execute(db);
  await sql`alter table broker_stream_pending drop constraint broker_stream_pending_scope_stream_entry_id_fkey`.execute(
    db,
  );
  await sql`
    alter table broker_stream_pending drop constraint broker_stream_pending_scope_stream_group_name_fkey`.execute(db);
  for (const [table, trigger, statement] of TRIGGERS) await afterDeleting(db, table, trigger, statement);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const [table, trigger] of TRIGGERS) {
    await sql`drop trigger ${sql.id(trigger)} on ${sql.table(table)}`.execute(db);
    await sql`drop function ${sql.id(trigger)}()`.execute(db);
  }
  await sql`
    alter table broker_stream_pending add constraint broker_stream_pending_scope_stream_group_name_fkey
    foreign key (scope, stream, group_name) references broker_stream_groups (scope, stream, group_name)
    on delete cascade`.execute(db);
  await sql`
    alter table broker_stream_pending add constraint broker_stream_pending_scope_stream_entry_id_fkey
    foreign key (scope, stream, entry_id) references broker_stream_entries (scope, stream, id) on delete cascade`.execute(
    db,
  );
  await sql`
    alter table broker_stream_entries add constraint broker_stream_entries_scope_stream_fkey
    foreign key (scope, stream) references broker_streams (scope, stream) on delete cascade`.execute(db);
}

/** Per table: the trigger (and its function, of the same name) and what it deletes of the rows `gone`. */
const TRIGGERS = [
  [
    "broker_streams",
    "broker_streams_delete_entries",
    "delete from broker_stream_entries e using gone g where e.scope = g.scope and e.stream = g.stream;",
  ],
  [
    "broker_stream_entries",
    "broker_stream_entries_delete_pending",
    `delete from broker_stream_pending p using gone g
      where p.scope = g.scope and p.stream = g.stream and p.entry_id = g.id;`,
  ],
  [
    "broker_stream_groups",
    "broker_stream_groups_delete_pending",
    `delete from broker_stream_pending p using gone g
      where p.scope = g.scope and p.stream = g.stream and p.group_name = g.group_name;`,
  ],
] as const;

/** After each statement deleting from `table`, `statement` over the rows deleted (`gone`). */
async function afterDeleting(db: Kysely<any>, table: string, trigger: string, statement: string): Promise<void> {
  await sql`
    create function ${sql.id(trigger)}() returns trigger language plpgsql as $$
    begin ${sql.raw(statement)} return null; end $$`.execute(db);
  await sql`
    create trigger ${sql.id(trigger)} after delete on ${sql.table(table)}
    referencing old table as gone for each statement execute function ${sql.id(trigger)}()`.execute(db);
}

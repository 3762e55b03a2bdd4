import { type Kysely, sql } from "kysely";

/**
 * The references of runs, of their steps and of the delivery ids that started them are kept
 * by the statements that write them, not by foreign keys. A foreign key checks each row it
 * inserts with a query of its own (the run INSERT checked each run's account and flow and
 * each delivery id's flow, the end write each step's run), which cost PostgreSQL more than
 * the rest of the run's statements together. Now:
 *
 * - a run, and the delivery id that started it, are inserted only by the statement that
 *   finds its flow, the account's and not deleted, and holds that flow (`for key share`, once
 *   per flow and statement) until it commits, as the foreign key held it (runs/insert.ts);
 *   the flow's account is the flow's own, whose foreign key stays;
 * - a step row is written only by the statement that writes its run's row (engine/store.ts,
 *   runs/insert.ts), a write refused when the run is not there;
 * - what the foreign keys deleted with a flow (its runs and delivery ids) and with a run (its
 *   steps) the triggers below delete, row by row as the foreign keys did. Nothing in the
 *   platform deletes a flow (deleting one marks it) and retention drops a day's runs and
 *   steps together.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table run_steps drop constraint run_steps_run_id_fkey`.execute(db);
  await sql`alter table runs drop constraint runs_flow_id_fkey`.execute(db);
  await sql`alter table runs drop constraint runs_account_id_fkey`.execute(db);
  await sql`alter table run_deliveries drop constraint run_deliveries_flow_id_fkey`.execute(db);
  await onEachDeleted(db, "runs", "runs_delete_steps", "delete from run_steps where run_id = old.id;");
  await onEachDeleted(
    db,
    "flows",
    "flows_delete_runs",
    "delete from run_deliveries where flow_id = old.id; delete from runs where flow_id = old.id;",
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const [table, trigger] of [
    ["flows", "flows_delete_runs"],
    ["runs", "runs_delete_steps"],
  ] as const) {
    await sql`drop trigger ${sql.id(trigger)} on ${sql.table(table)}`.execute(db);
    await sql`drop function ${sql.id(trigger)}()`.execute(db);
  }
  await addCascade(db, "runs", "runs_account_id_fkey", "account_id", "accounts (id)");
  await addCascade(db, "runs", "runs_flow_id_fkey", "flow_id", "flows (id)");
  await addCascade(db, "run_deliveries", "run_deliveries_flow_id_fkey", "flow_id", "flows (id)");
  await addCascade(db, "run_steps", "run_steps_run_id_fkey", "run_id", "runs (id)");
}

/** After each row of `table` deleted, `statements` (reading `old`): a trigger, and its function of the same name. */
async function onEachDeleted(db: Kysely<any>, table: string, trigger: string, statements: string): Promise<void> {
  await sql`
    create function ${sql.id(trigger)}() returns trigger language plpgsql as $$
    begin ${sql.raw(statements)} return null; end $$`.execute(db);
  await sql`
    create trigger ${sql.id(trigger)} after delete on ${sql.table(table)}
    for each row execute function ${sql.id(trigger)}()`.execute(db);
}

async function addCascade(db: Kysely<any>, table: string, name: string, column: string, target: string) {
  await sql`
    alter table ${sql.table(table)} add constraint ${sql.id(name)}
    foreign key (${sql.id(column)}) references ${sql.raw(target)} on delete cascade`.execute(db);
}

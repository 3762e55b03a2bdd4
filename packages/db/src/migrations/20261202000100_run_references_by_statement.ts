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
  await sql`
    create function delete_run_steps() returns trigger language plpgsql as $$
    begin
      delete from run_steps where run_id = old.id;
      return null;
    end $$`.execute(db);
  await sql`
    create trigger runs_delete_steps after delete on runs
    for each row execute function delete_run_steps()`.execute(db);
  await sql`
    create function delete_flow_runs() returns trigger language plpgsql as $$
    begin
      delete from run_deliveries where flow_id = old.id;
      delete from runs where flow_id = old.id;
      return null;
    end $$`.execute(db);
  await sql`
    create trigger flows_delete_runs after delete on flows
    for each row execute function delete_flow_runs()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger flows_delete_runs on flows`.execute(db);
  await sql`drop function delete_flow_runs()`.execute(db);
  await sql`drop trigger runs_delete_steps on runs`.execute(db);
  await sql`drop function delete_run_steps()`.execute(db);
  await sql`
    alter table runs add constraint runs_account_id_fkey
    foreign key (account_id) references accounts (id) on delete cascade`.execute(db);
  await sql`
    alter table runs add constraint runs_flow_id_fkey
    foreign key (flow_id) references flows (id) on delete cascade`.execute(db);
  await sql`
    alter table run_deliveries add constraint run_deliveries_flow_id_fkey
    foreign key (flow_id) references flows (id) on delete cascade`.execute(db);
  await sql`
    alter table run_steps add constraint run_steps_run_id_fkey
    foreign key (run_id) references runs (id) on delete cascade`.execute(db);
}

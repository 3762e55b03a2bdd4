import { type Kysely, sql } from "kysely";

/**
 * Steps of runs get a row each, written when the step changes: its record (status,
 * attempts, error, timings) and, once, when it ends, its output. Before, every checkpoint
 * rewrote `runs.steps` whole, outputs included: a run of a 1 MB output and 30 more steps
 * wrote the output 31 times. The run's output (its last step's) and its `respond` answer
 * are read from these rows, so nothing is stored twice.
 *
 * Runs written before keep their steps: each entry of `runs.steps` becomes a row.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table run_steps (
      run_id uuid not null references runs (id) on delete cascade,
      name text not null,
      record jsonb not null,
      output jsonb,
      primary key (run_id, name)
    )`.execute(db);
  await sql`
    insert into run_steps (run_id, name, record, output)
    select r.id, s.key, s.value - 'output', s.value -> 'output'
    from runs as r cross join lateral jsonb_each(r.steps) as s`.execute(db);
  await sql`alter table runs drop column steps, drop column output, drop column response`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    alter table runs add column steps jsonb not null default '{}'::jsonb, add column output jsonb,
      add column response jsonb`.execute(db);
  await sql`drop table if exists run_steps`.execute(db);
}

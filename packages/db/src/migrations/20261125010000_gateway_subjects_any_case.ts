import { type Kysely, sql } from "kysely";

/**
 * Gateway subjects are unique whatever their case: `ASHOP` beside `ashop` would be two
 * addresses a person reads as one, each answering for another account. Subjects are ASCII
 * (letters, digits, `_`, `-`, `.`), so `lower` on the "C" collation folds every letter.
 *
 * Gateways saved before this may already differ only by case: the oldest keeps its subject
 * and each later one gets a suffix of its id (`ashop-0194ab12`), since an index cannot be
 * built over them otherwise and a migration that fails stops every process from starting.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    update gateways as g
    set subject = left(g.subject, 55) || '-' || left(replace(g.id::text, '-', ''), 8), modified_at = now()
    from (
      select id, row_number() over (partition by lower(subject) order by created_at, id) as rank from gateways
    ) as ranked
    where ranked.id = g.id and ranked.rank > 1`.execute(db);
  // One unique index, so that a create's ON CONFLICT has one arbiter: with two, concurrent
  // creates of one subject could fail on the index the upsert did not name.
  await sql`create unique index gateways_subject_any_case on gateways (lower(subject))`.execute(db);
  await sql`alter table gateways drop constraint gateways_subject_key`.execute(db);
  // Requests find their gateway by the subject as written.
  await sql`create index gateways_subject on gateways (subject)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists gateways_subject`.execute(db);
  await sql`alter table gateways add constraint gateways_subject_key unique (subject)`.execute(db);
  await sql`drop index if exists gateways_subject_any_case`.execute(db);
}

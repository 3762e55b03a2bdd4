import { type Kysely, sql } from "kysely";

/**
 * What each scope keeps in the PostgreSQL broker, counted as it changes, so that per-account
 * limits read one row instead of summing tables: `kv_bytes` (keys and values) and
 * `stream_bytes` (entry payloads) of each account's scope. Triggers keep the counts: every
 * way a row comes or goes (writes, trims, expiry sweeps, a stream's deletion cascading to
 * its entries) is counted; the platform's own rows skip them.
 *
 * And `broker_windows`: counts over a sliding window approximated from two fixed ones (see
 * `broker_take`), for limits of thousands of calls per second.
 */
/**
 * Rows of an account's scope: the platform's own (scope `platform`, or `<namespace>/platform`:
 * the run queue, dead letters, markers) are under no account's limit and are not counted.
 */
const OWNED = (row: string) => `${row}scope <> 'platform' and ${row}scope not like '%/platform'`;

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table broker_usage (
      scope text collate "C" not null,
      name text collate "C" not null,
      value bigint not null,
      primary key (scope, name)
    )`.execute(db);
  // Stream entries go a row at a time as well: the run queue's are deleted as fast as they are
  // appended, and a statement-level trigger would copy every one of them into its transition
  // table. KV keys go by the thousand (a bucket's deletion): one update per statement.
  for (const [table, counted, size, removals] of [
    ["broker_kv", "kv_bytes", (row: string) => `octet_length(${row}key) + octet_length(${row}value)`, "statement"],
    ["broker_stream_entries", "stream_bytes", (row: string) => `octet_length(${row}payload)`, "row"],
  ] as const) {
    const name = sql.raw(table);
    const count = (rows: string, sign: string) => `
      insert into broker_usage as u (scope, name, value)
      select scope, '${counted}', ${sign}sum(${size("")}) from ${rows} where ${OWNED("")} group by scope
      on conflict (scope, name) do update set value = u.value + excluded.value;`;
    // Writes come a row at a time, and the platform's own (the run queue's every append) skip the trigger.
    await sql`
      create function ${sql.raw(`${table}_usage_added`)}() returns trigger language plpgsql as $$
      begin
        insert into broker_usage as u (scope, name, value) values (new.scope, '${sql.raw(counted)}', ${sql.raw(size("new."))})
        on conflict (scope, name) do update set value = u.value + excluded.value;
        return null;
      end $$`.execute(db);
    await sql`
      create trigger ${sql.raw(`${table}_usage_insert`)} after insert on ${name}
      for each row when (${sql.raw(OWNED("new."))}) execute function ${sql.raw(`${table}_usage_added`)}()`.execute(db);
    // Changes may come by the thousand: one update per statement.
    await sql`
      create function ${sql.raw(`${table}_usage`)}() returns trigger language plpgsql as $$
      begin
        ${sql.raw(count("added", ""))}
        ${sql.raw(count("removed", "-"))}
        return null;
      end $$`.execute(db);
    await sql`
      create trigger ${sql.raw(`${table}_usage_update`)} after update on ${name}
      referencing new table as added old table as removed
      for each statement execute function ${sql.raw(`${table}_usage`)}()`.execute(db);
    if (removals === "row") {
      await sql`
        create function ${sql.raw(`${table}_usage_removed`)}() returns trigger language plpgsql as $$
        begin
          update broker_usage set value = value - ${sql.raw(size("old."))}
          where scope = old.scope and name = '${sql.raw(counted)}';
          return null;
        end $$`.execute(db);
      await sql`
        create trigger ${sql.raw(`${table}_usage_delete`)} after delete on ${name}
        for each row when (${sql.raw(OWNED("old."))}) execute function ${sql.raw(`${table}_usage_removed`)}()`.execute(
        db,
      );
    } else {
      await sql`
        create function ${sql.raw(`${table}_usage_removed`)}() returns trigger language plpgsql as $$
        begin
          ${sql.raw(count("removed", "-"))}
          return null;
        end $$`.execute(db);
      await sql`
        create trigger ${sql.raw(`${table}_usage_delete`)} after delete on ${name}
        referencing old table as removed for each statement execute function ${sql.raw(`${table}_usage_removed`)}()`.execute(
        db,
      );
    }
    // What is there already.
    await sql`
      insert into broker_usage (scope, name, value)
      select scope, ${counted}, sum(${sql.raw(size(""))}) from ${name} where ${sql.raw(OWNED(""))} group by scope`.execute(
      db,
    );
  }

  await sql`
    create table broker_windows (
      scope text collate "C" not null,
      key text collate "C" not null,
      window_index bigint not null,
      current_count bigint not null,
      previous_count bigint not null,
      primary key (scope, key)
    )`.execute(db);
  // The window's count is the previous window's, weighted by how much of it still overlaps,
  // plus the current one's; up to p_count calls are granted within p_limit, in one step.
  await sql`
    create function broker_take(p_scope text, p_key text, p_limit bigint, p_window_ms bigint, p_count bigint,
      out granted bigint, out used bigint, out wait_ms bigint) language plpgsql as $$
    declare
      now_ms double precision := extract(epoch from clock_timestamp()) * 1000;
      idx bigint := floor(now_ms / p_window_ms);
      frac double precision := (now_ms - idx * p_window_ms) / p_window_ms;
      w_idx bigint; cur bigint; prev bigint; weighted double precision;
    begin
      insert into broker_windows as w (scope, key, window_index, current_count, previous_count)
      values (p_scope, p_key, idx, 0, 0)
      on conflict (scope, key) do update set window_index = w.window_index
      returning w.window_index, w.current_count, w.previous_count into w_idx, cur, prev;
      if w_idx = idx - 1 then prev := cur; cur := 0;
      elsif w_idx <> idx then prev := 0; cur := 0;
      end if;
      weighted := prev * (1 - frac) + cur;
      granted := greatest(0, least(p_count, floor(p_limit - weighted)));
      cur := cur + granted;
      if p_count > 0 then
        update broker_windows set window_index = idx, current_count = cur, previous_count = prev
        where scope = p_scope and key = p_key;
      end if;
      used := round(weighted + granted);
      wait_ms := 0;
      if granted < p_count then
        if prev > 0 and cur <= p_limit - 1 then
          wait_ms := ceil((1 - (p_limit - 1 - cur)::double precision / prev - frac) * p_window_ms);
        else
          wait_ms := ceil((idx + 1) * p_window_ms - now_ms
            + greatest(0, 1 - (p_limit - 1)::double precision / greatest(cur, 1)) * p_window_ms);
        end if;
      end if;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function if exists broker_take`.execute(db);
  await sql`drop table if exists broker_windows`.execute(db);
  for (const table of ["broker_kv", "broker_stream_entries"]) {
    for (const op of ["insert", "update", "delete"]) {
      await sql`drop trigger if exists ${sql.raw(`${table}_usage_${op}`)} on ${sql.raw(table)}`.execute(db);
    }
    await sql`drop function if exists ${sql.raw(`${table}_usage`)}`.execute(db);
    await sql`drop function if exists ${sql.raw(`${table}_usage_added`)}`.execute(db);
    await sql`drop function if exists ${sql.raw(`${table}_usage_removed`)}`.execute(db);
  }
  await sql`drop table if exists broker_usage`.execute(db);
}

import type { Database } from "@platform/db";
import { type Kysely, sql } from "kysely";
import { totpSealingContext } from "./accounts/totp.ts";
import { flowSecretSealingContext } from "./flows/webhook-flows.ts";
import type { Sealer } from "./sealing.ts";
import { secretSealingContext } from "./secrets/secrets.ts";

/** A column holding sealed values, with what each value was sealed for (its associated data). */
export interface SealedColumn {
  table: keyof Database & string;
  column: string;
  /** The row's primary key columns; batches walk the table in their order. */
  key: readonly string[];
  context(row: Record<string, string>): string;
}

function sealedColumn<K extends string>(spec: {
  table: keyof Database & string;
  column: string;
  key: readonly K[];
  context(row: Record<K, string>): string;
}): SealedColumn {
  return spec as SealedColumn;
}

/** Every sealed value the platform keeps. A new one is one more entry here. */
export const SEALED_COLUMNS: readonly SealedColumn[] = [
  sealedColumn({
    table: "secrets",
    column: "value",
    key: ["account_id", "key"],
    context: (row) => secretSealingContext(row.account_id, row.key),
  }),
  sealedColumn({
    table: "user_totp",
    column: "secret",
    key: ["user_id"],
    context: (row) => totpSealingContext(row.user_id),
  }),
  sealedColumn({
    table: "flows",
    column: "signing_secret",
    key: ["id"],
    context: (row) => flowSecretSealingContext(row.id),
  }),
];

export interface ResealReport {
  table: string;
  column: string;
  /** Values moved to the current key by this run. */
  resealed: number;
  /** Values no listed key opens; left as they are. */
  unreadable: number;
}

async function resealColumn(
  db: Kysely<Database>,
  sealer: Sealer,
  spec: SealedColumn,
  batchSize: number,
): Promise<ResealReport> {
  const report: ResealReport = { table: spec.table, column: spec.column, resealed: 0, unreadable: 0 };
  const table = sql.table(spec.table);
  const value = sql.ref(spec.column);
  const keys = sql.join(spec.key.map((name) => sql.ref(name)));
  let after: string[] | undefined;
  for (;;) {
    // Keyset paging: rows left unreadable, or written meanwhile, never hold a batch back.
    const { rows } = await sql<Record<string, string>>`
      select ${keys}, ${value} as sealed from ${table}
      where ${value} is not null and not starts_with(${value}, ${sealer.currentPrefix})
      ${after ? sql`and (${keys}) > (${sql.join(after)})` : sql``}
      order by ${keys} limit ${batchSize}`.execute(db);
    const last = rows.at(-1);
    if (!last) return report;
    const changes: { row: Record<string, string>; resealed: string }[] = [];
    for (const row of rows) {
      const context = spec.context(row);
      let plaintext: string;
      try {
        plaintext = sealer.open(row.sealed ?? "", context);
      } catch {
        report.unreadable += 1;
        continue;
      }
      changes.push({ row, resealed: sealer.seal(plaintext, context) });
    }
    await db.transaction().execute(async (trx) => {
      for (const { row, resealed } of changes) {
        const matches = sql.join(
          spec.key.map((name) => sql`${sql.ref(name)} = ${row[name]}`),
          sql` and `,
        );
        // Only if unchanged since read: a value written meanwhile is already under the current key.
        const { rows: updated } = await sql`
          update ${table} set ${value} = ${resealed}
          where ${matches} and ${value} = ${row.sealed} returning 1 as one`.execute(trx);
        report.resealed += updated.length;
      }
    });
    after = spec.key.map((name) => last[name] ?? "");
    if (rows.length < batchSize) return report;
  }
}

/**
 * Re-seals every sealed value under the current key, a batch (one transaction) at a time.
 * Values already under it are skipped, so a second run finds nothing to do; values that
 * no listed key opens are counted and left alone.
 */
export async function resealAll(
  db: Kysely<Database>,
  sealer: Sealer,
  options: { batchSize?: number } = {},
): Promise<ResealReport[]> {
  const reports: ResealReport[] = [];
  for (const spec of SEALED_COLUMNS) {
    reports.push(await resealColumn(db, sealer, spec, options.batchSize ?? 500));
  }
  return reports;
}

import { createHash } from "node:crypto";
import type { Database } from "@platform/db";
import { type Kysely, type RawBuilder, sql } from "kysely";
import { invalidInput } from "../../errors.ts";
import type { RegistryPage, RegistryQuery } from "./schemas.ts";

/** A query in the mirror's terms: lower-case words, the bounds, and a fingerprint its cursors carry. */
export interface QueryPlan {
  /** Distinct lower-case words, each of which must occur. */
  terms: string[];
  /** The words joined by one space: what the name is ranked against. */
  phrase: string;
  since?: Date;
  latestOnly: boolean;
  fingerprint: string;
}

/** Where a page ends: its last entry's rank (null without search), name and version. */
export interface Position {
  tier: number | null;
  name: string;
  version: string;
}

export function planQuery(query: RegistryQuery): QueryPlan {
  const words = (query.search ?? "").toLowerCase().split(/\s+/).filter(Boolean);
  const terms = [...new Set(words)];
  const since = query.updated_since ? new Date(query.updated_since) : undefined;
  const latestOnly = query.latest_only === true;
  const fingerprint = createHash("sha256")
    .update(JSON.stringify([terms, since?.getTime() ?? null, latestOnly]))
    .digest("base64url")
    .slice(0, 12);
  return { terms, phrase: words.join(" "), since, latestOnly, fingerprint };
}

const badCursor = () => invalidInput({ path: "cursor", message: "is not a next_cursor of this query" });

export function encodeCursor(plan: QueryPlan, at: Position): string {
  return Buffer.from(JSON.stringify([plan.fingerprint, at.tier, at.name, at.version])).toString("base64url");
}

/** The position a cursor names; 400 when it is not one this query handed out. */
export function decodeCursor(plan: QueryPlan, cursor: string): Position {
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw badCursor();
  }
  if (!Array.isArray(fields) || fields.length !== 4) throw badCursor();
  const [fingerprint, tier, name, version] = fields;
  const searching = plan.terms.length > 0;
  const tierFits = searching ? Number.isInteger(tier) && tier >= 0 && tier <= 3 : tier === null;
  if (fingerprint !== plan.fingerprint || !tierFits || typeof name !== "string" || typeof version !== "string") {
    throw badCursor();
  }
  if (name.includes("\u0000") || version.includes("\u0000")) throw badCursor();
  return { tier: searching ? tier : null, name, version };
}

const likeAnywhere = (text: string) => `%${text.replace(/[\\%_]/g, "\\$&")}%`;

/**
 * The rank of a match: 0 the name is the search text, 1 the name contains it, 2 the name
 * contains every word, 3 only the description holds some word.
 */
function tierOf(plan: QueryPlan): RawBuilder<number> {
  const everyWord =
    plan.terms.length > 1
      ? sql`when ${sql.join(
          plan.terms.map((term) => sql`name_search like ${likeAnywhere(term)}`),
          sql` and `,
        )} then 2`
      : sql``;
  return sql<number>`(case when name_search = ${plan.phrase} then 0
    when name_search like ${likeAnywhere(plan.phrase)} then 1 ${everyWord} else 3 end)`;
}

function matching(db: Kysely<Database>, plan: QueryPlan) {
  let query = db.selectFrom("mcp_registry_servers");
  if (plan.latestOnly) query = query.where("is_latest", "=", true);
  if (plan.since) query = query.where("updated_at", ">=", plan.since);
  // Each word a substring of the lower-case name and description: the trigram index finds them.
  for (const term of plan.terms) query = query.where("search_text", "like", likeAnywhere(term));
  return query;
}

/** Entries matching the plan, counted exactly. */
export async function countMatches(db: Kysely<Database>, plan: QueryPlan): Promise<number> {
  const row = await matching(db, plan)
    .select((eb) => eb.fn.countAll<number>().as("total"))
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

/**
 * One page of matches after `after`, ranked, with the cursor of the next page when there
 * is one; `bytes` is the size of its entries as JSON.
 */
export async function readPage(
  db: Kysely<Database>,
  plan: QueryPlan,
  limit: number,
  after?: Position,
): Promise<{ page: Omit<RegistryPage, "total">; bytes: number }> {
  const searching = plan.terms.length > 0;
  const tier: RawBuilder<number | null> = searching ? tierOf(plan) : sql<null>`null`;
  let query = matching(db, plan).select(["name", "version", sql<string>`entry::text`.as("entry"), tier.as("tier")]);
  if (after && searching) {
    query = query.where(sql<boolean>`(${tier}, name, version) > (${after.tier}, ${after.name}, ${after.version})`);
  } else if (after) {
    query = query.where((eb) => eb(eb.refTuple("name", "version"), ">", eb.tuple(after.name, after.version)));
  }
  if (searching) query = query.orderBy(tier);
  const rows = await query
    .orderBy("name")
    .orderBy("version")
    .limit(limit + 1)
    .execute();
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  const more = rows.length > limit && last;
  let bytes = 0;
  const servers = shown.map((row) => {
    bytes += row.entry.length;
    return JSON.parse(row.entry) as RegistryPage["servers"][number];
  });
  const next = more
    ? { next_cursor: encodeCursor(plan, { tier: last.tier, name: last.name, version: last.version }) }
    : {};
  return { page: { servers, ...next, received: shown.length }, bytes };
}

/** The entry of the latest version of the server `name` (as the list answers it), if the mirror has one. */
export async function readLatestEntry(
  db: Kysely<Database>,
  name: string,
): Promise<RegistryPage["servers"][number] | undefined> {
  const row = await db
    .selectFrom("mcp_registry_servers")
    .select(sql<string>`entry::text`.as("entry"))
    .where("name", "=", name)
    .where("is_latest", "=", true)
    .executeTakeFirst();
  return row ? (JSON.parse(row.entry) as RegistryPage["servers"][number]) : undefined;
}

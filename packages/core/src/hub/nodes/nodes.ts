import type { Database } from "@platform/db";
import { type Kysely, type Selectable, sql } from "kysely";
import { DomainError } from "../../errors.ts";
import { unixSeconds } from "../../time.ts";
import type { NodeTemplateInput } from "./schemas.ts";

/**
 * Node templates of an account: a built-in function (`subject`), its payload and retry
 * options, in a collection. Flows run them as steps, naming them by `nodes.<id>`.
 */

export interface Node {
  id: string;
  /** `nodes.<id>`. */
  subject: string;
  collection: string;
  data: NodeTemplateInput & { id: string };
  /** Unix seconds. */
  modified: number;
}

type NodeRow = Selectable<Database["node_templates"]>;

const notFound = () => new DomainError("not_found", "node not found");

function toNode(row: NodeRow): Node {
  return {
    id: row.id,
    subject: `nodes.${row.id}`,
    collection: row.collection,
    data: {
      id: row.id,
      name: row.name,
      description: row.description,
      node_type: row.node_type,
      subject: row.subject,
      payload: row.payload,
      options: { timeout: row.timeout_ms, attempts: row.attempts, backoff_ms: row.backoff_ms },
    },
    modified: unixSeconds(row.updated_at),
  };
}

function columnsOf(data: NodeTemplateInput) {
  return {
    name: data.name,
    description: data.description,
    node_type: data.node_type,
    subject: data.subject,
    payload: JSON.stringify(data.payload),
    timeout_ms: data.options.timeout,
    attempts: data.options.attempts,
    backoff_ms: data.options.backoff_ms,
  };
}

export async function createNode(
  db: Kysely<Database>,
  accountId: string,
  collection: string,
  data: NodeTemplateInput,
): Promise<Node> {
  const row = await db
    .insertInto("node_templates")
    .values({ id: Bun.randomUUIDv7(), account_id: accountId, collection, ...columnsOf(data) })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toNode(row);
}

/** The account's nodes, of one collection when given, oldest first. */
export async function listNodes(db: Kysely<Database>, accountId: string, collection?: string): Promise<Node[]> {
  let query = db.selectFrom("node_templates").selectAll().where("account_id", "=", accountId);
  if (collection !== undefined) query = query.where("collection", "=", collection);
  const rows = await query.orderBy("created_at").orderBy("id").execute();
  return rows.map(toNode);
}

export async function getNode(db: Kysely<Database>, accountId: string, id: string): Promise<Node> {
  const row = await db
    .selectFrom("node_templates")
    .selectAll()
    .where("account_id", "=", accountId)
    .where("id", "=", id)
    .executeTakeFirst();
  if (!row) throw notFound();
  return toNode(row);
}

/** The account's nodes among `ids`, by id; ids the account has no node with are left out. */
export async function getNodes(db: Kysely<Database>, accountId: string, ids: string[]): Promise<Map<string, Node>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom("node_templates")
    .selectAll()
    .where("account_id", "=", accountId)
    .where("id", "in", [...new Set(ids)])
    .execute();
  return new Map(rows.map((row) => [row.id, toNode(row)]));
}

/** Replaces the node's data (and its collection, when given); its id and subject stay. */
export async function updateNode(
  db: Kysely<Database>,
  accountId: string,
  id: string,
  change: { collection?: string; data: NodeTemplateInput },
): Promise<Node> {
  const row = await db
    .updateTable("node_templates")
    .set({
      ...columnsOf(change.data),
      ...(change.collection !== undefined ? { collection: change.collection } : {}),
      updated_at: sql`now()`,
    })
    .where("account_id", "=", accountId)
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound();
  return toNode(row);
}

export async function deleteNode(db: Kysely<Database>, accountId: string, id: string): Promise<void> {
  const deleted = await db
    .deleteFrom("node_templates")
    .where("account_id", "=", accountId)
    .where("id", "=", id)
    .returning("id")
    .executeTakeFirst();
  if (!deleted) throw notFound();
}

import { randomBytes } from "node:crypto";
import type { Database } from "@platform/db";
import { type Selectable, sql } from "kysely";
import { DomainError } from "../errors.ts";
import type { Services } from "../services.ts";
import { unixSeconds } from "../time.ts";
import type { CreateGatewayInput, Gateway, UpdateGatewayInput } from "./schemas.ts";

/**
 * Gateways of an account: the control plane. Every change is announced through the
 * definition cache, so the data plane of every API process drops its copy at once.
 */
export type GatewayDeps = Pick<Services, "db" | "config" | "storageDefinitions">;

export type GatewayRow = Selectable<Database["gateways"]>;

/** Missing gateways answer the spec's `The requested resource does not exist` (errors.ts, area `gateway`). */
export const gatewayNotFound = (topic: string) => new DomainError("not_found", `no gateway ${topic}`);

/** The data plane keeps gateways by topic alone: topics are unique across accounts. */
export const announceGatewayChange = (deps: Pick<GatewayDeps, "storageDefinitions">, subject: string) =>
  deps.storageDefinitions.changed("gateway", "", subject);

export function gatewayUrl(deps: Pick<GatewayDeps, "config">, subject: string): string {
  return `${deps.config.gatewayBaseUrl}/${subject}`;
}

export function toGateway(deps: Pick<GatewayDeps, "config">, row: GatewayRow): Gateway {
  return {
    name: row.name,
    description: row.description,
    url: gatewayUrl(deps, row.subject),
    subject: row.subject,
    active: row.active,
    timeout: row.timeout_ms,
    limit: { request: row.limit_requests, time: row.limit_seconds },
    modified: unixSeconds(row.modified_at),
    type: row.type,
  };
}

/** The account's live gateway of this topic, or `not_found`. */
export async function findLiveGateway(deps: Pick<GatewayDeps, "db">, accountId: string, topic: string) {
  const row = await deps.db
    .selectFrom("gateways")
    .selectAll()
    .where("account_id", "=", accountId)
    .where("subject", "=", topic)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!row) throw gatewayNotFound(topic);
  return row;
}

/**
 * Creates a gateway; its topic is generated when absent. A topic stays reserved after
 * its gateway is deleted: another account asking for it is refused (409), while the same
 * account gets a fresh gateway under it, without the old mappings.
 */
export async function createGateway(deps: GatewayDeps, accountId: string, input: CreateGatewayInput) {
  const subject = input.subject ?? randomBytes(8).toString("hex");
  const id = Bun.randomUUIDv7();
  const settings = {
    name: input.name,
    description: input.description,
    active: input.active,
    timeout_ms: input.timeout,
    limit_requests: input.limit.request,
    limit_seconds: input.limit.time,
    type: input.type,
  };
  const row = await deps.db.transaction().execute(async (trx) => {
    const created = await trx
      .insertInto("gateways")
      .values({ id, account_id: accountId, subject, ...settings })
      // Subjects are unique whatever their case (`gateways_subject_any_case`); the same account
      // taking its deleted subject back may change its case.
      .onConflict((oc) =>
        oc
          .expression(sql`lower(subject)`)
          .doUpdateSet({ ...settings, subject, created_at: sql`now()`, modified_at: sql`now()`, deleted_at: null })
          .where("gateways.account_id", "=", accountId)
          .where("gateways.deleted_at", "is not", null),
      )
      .returningAll()
      .executeTakeFirst();
    if (created && created.id !== id) {
      await trx
        .updateTable("gateway_mappings")
        .set({ deleted_at: sql`now()` })
        .where("gateway_id", "=", created.id)
        .where("deleted_at", "is", null)
        .execute();
    }
    return created;
  });
  if (!row) throw new DomainError("conflict", `the subject ${subject} is taken: choose another`);
  await announceGatewayChange(deps, subject);
  return toGateway(deps, row);
}

export async function getGateway(deps: GatewayDeps, accountId: string, topic: string) {
  return toGateway(deps, await findLiveGateway(deps, accountId, topic));
}

/** The account's live gateways, oldest first. */
export async function listGateways(deps: GatewayDeps, accountId: string) {
  const rows = await deps.db
    .selectFrom("gateways")
    .selectAll()
    .where("account_id", "=", accountId)
    .where("deleted_at", "is", null)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map((row) => toGateway(deps, row));
}

/** Changes the fields given; the others stay. */
export async function updateGateway(deps: GatewayDeps, accountId: string, topic: string, change: UpdateGatewayInput) {
  const row = await deps.db
    .updateTable("gateways")
    .set({
      ...(change.name !== undefined && { name: change.name }),
      ...(change.description !== undefined && { description: change.description }),
      ...(change.active !== undefined && { active: change.active }),
      ...(change.timeout !== undefined && { timeout_ms: change.timeout }),
      ...(change.limit !== undefined && { limit_requests: change.limit.request, limit_seconds: change.limit.time }),
      ...(change.type !== undefined && { type: change.type }),
      modified_at: sql`now()`,
    })
    .where("account_id", "=", accountId)
    .where("subject", "=", topic)
    .where("deleted_at", "is", null)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw gatewayNotFound(topic);
  await announceGatewayChange(deps, topic);
  return toGateway(deps, row);
}

/** Marks the gateway deleted: its address answers 404 from now on, in every process. */
export async function deleteGateway(deps: GatewayDeps, accountId: string, topic: string): Promise<void> {
  const row = await deps.db
    .updateTable("gateways")
    .set({ deleted_at: sql`now()`, modified_at: sql`now()` })
    .where("account_id", "=", accountId)
    .where("subject", "=", topic)
    .where("deleted_at", "is", null)
    .returning("id")
    .executeTakeFirst();
  if (!row) throw gatewayNotFound(topic);
  await announceGatewayChange(deps, topic);
}

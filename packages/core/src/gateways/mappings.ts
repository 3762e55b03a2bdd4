import { sql } from "kysely";
import { DomainError, invalidInput } from "../errors.ts";
import { announceGatewayChange, findLiveGateway, type GatewayDeps } from "./gateways.ts";
import { routeOf } from "./routes.ts";
import type { HttpMethod, Mapping } from "./schemas.ts";

/** Mappings of a gateway: which flow a method and path run. Deleting marks them. */

const mappingNotFound = (method: string, path: string) =>
  new DomainError("not_found", `no mapping for ${method} ${path}`);

/**
 * Maps a method and path of the account's gateway to one of its flows. 409 when a live
 * mapping of the method has the same route (the same path, or one that differs only in
 * its parameters' names, which would match the same requests).
 */
export async function createMapping(
  deps: GatewayDeps,
  accountId: string,
  topic: string,
  input: { method: HttpMethod; path: string; flow_id: string },
): Promise<Mapping> {
  const gateway = await findLiveGateway(deps, accountId, topic);
  const flow = await deps.db
    .selectFrom("flows")
    .select("id")
    .where("account_id", "=", accountId)
    .where("id", "=", input.flow_id)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!flow) throw invalidInput({ path: "flow_id", message: "the account has no flow with this id" });
  const created = await deps.db
    .insertInto("gateway_mappings")
    .values({
      id: Bun.randomUUIDv7(),
      gateway_id: gateway.id,
      account_id: accountId,
      method: input.method,
      path: input.path,
      route: routeOf(input.path),
      flow_id: input.flow_id,
    })
    .onConflict((oc) => oc.columns(["gateway_id", "method", "route"]).where("deleted_at", "is", null).doNothing())
    .returning("id")
    .executeTakeFirst();
  if (!created) {
    // Name the mapping in the way, which may differ from the request in its parameters' names.
    const existing = await deps.db
      .selectFrom("gateway_mappings")
      .select("path")
      .where("gateway_id", "=", gateway.id)
      .where("method", "=", input.method)
      .where("route", "=", routeOf(input.path))
      .where("deleted_at", "is", null)
      .executeTakeFirst();
    throw new DomainError("conflict", `a mapping for ${input.method} ${existing?.path ?? input.path} exists`);
  }
  await announceGatewayChange(deps, topic);
  return { method: input.method, path: input.path, flow_id: input.flow_id };
}

/** The gateway's live mappings, oldest first. */
export async function listMappings(deps: GatewayDeps, accountId: string, topic: string): Promise<Mapping[]> {
  const gateway = await findLiveGateway(deps, accountId, topic);
  const rows = await deps.db
    .selectFrom("gateway_mappings")
    .select(["method", "path", "flow_id"])
    .where("gateway_id", "=", gateway.id)
    .where("account_id", "=", accountId)
    .where("deleted_at", "is", null)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map((row) => ({ method: row.method as HttpMethod, path: row.path, flow_id: row.flow_id }));
}

/** Marks the mapping of exactly this method and path deleted. */
export async function deleteMapping(
  deps: GatewayDeps,
  accountId: string,
  topic: string,
  method: HttpMethod,
  path: string,
): Promise<void> {
  const gateway = await findLiveGateway(deps, accountId, topic);
  const row = await deps.db
    .updateTable("gateway_mappings")
    .set({ deleted_at: sql`now()` })
    .where("gateway_id", "=", gateway.id)
    .where("account_id", "=", accountId)
    .where("method", "=", method)
    .where("path", "=", path)
    .where("deleted_at", "is", null)
    .returning("id")
    .executeTakeFirst();
  if (!row) throw mappingNotFound(method, path);
  await announceGatewayChange(deps, topic);
}

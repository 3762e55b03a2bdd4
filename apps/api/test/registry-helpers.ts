import { expect } from "bun:test";
import { bearer, readBody } from "./accounts-helpers.ts";
import type { TestApi } from "./harness.ts";
import { OFFICIAL, type UpstreamItem } from "./registry-upstream.ts";

/** What the API answers for an upstream item: its server.json fields (description and remotes always there) plus `_meta`. */
export function expectedEntry(item: UpstreamItem): Record<string, unknown> {
  const { server, _meta } = item;
  const publisherMeta = (server._meta ?? {}) as Record<string, unknown>;
  return {
    ...server,
    description: server.description ?? "",
    remotes: server.remotes ?? [],
    _meta: { ...publisherMeta, ..._meta },
  };
}

export interface ReferenceQuery {
  search?: string;
  updatedSince?: string;
  latestOnly?: boolean;
}

/**
 * The entries a query should answer, in order, worked out from the upstream's items the
 * way the README describes it: every word a substring of the name or description, ranked
 * (name equal to the search text, name containing it, name containing every word, the
 * rest), then by name and version; deleted servers left out.
 */
export function reference(items: UpstreamItem[], query: ReferenceQuery = {}): Record<string, unknown>[] {
  const words = (query.search ?? "").toLowerCase().split(/\s+/).filter(Boolean);
  const phrase = words.join(" ");
  const since = query.updatedSince ? Date.parse(query.updatedSince) : undefined;
  const tier = (name: string) => {
    if (words.length === 0) return 0;
    if (name === phrase) return 0;
    if (name.includes(phrase)) return 1;
    if (words.length > 1 && words.every((w) => name.includes(w))) return 2;
    return 3;
  };
  return items
    .filter(({ server, _meta }) => {
      const meta = _meta[OFFICIAL];
      if (meta.status === "deleted") return false;
      if (query.latestOnly && !meta.isLatest) return false;
      if (since !== undefined && Date.parse(meta.updatedAt) < since) return false;
      const text = `${server.name}\n${server.description ?? ""}`.toLowerCase();
      return words.every((w) => text.includes(w));
    })
    .map((item) => ({ item, tier: tier(item.server.name.toLowerCase()) }))
    .sort((a, b) => {
      if (a.tier !== b.tier) return a.tier - b.tier;
      const [x, y] = [a.item.server, b.item.server];
      if (x.name !== y.name) return x.name < y.name ? -1 : 1;
      return x.version < y.version ? -1 : x.version > y.version ? 1 : 0;
    })
    .map(({ item }) => expectedEntry(item));
}

export function registryPath(query: Record<string, string | number | boolean | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return `/hub/mcp/registry${text ? `?${text}` : ""}`;
}

/** GET /hub/mcp/registry with the caller's token: status and body. */
export async function getRegistry(
  api: TestApi,
  token: string,
  query: Record<string, string | number | boolean | undefined> = {},
) {
  const response = await api.request(registryPath(query), { headers: bearer(token) });
  return { status: response.status, body: await readBody(response) };
}

/**
 * Every page of a query, following next_cursor: checks each page's shape (no `cursor`
 * field, `received` = its entries, the same `total` throughout, next_cursor absent only on
 * the last) and returns the entries in order and the total.
 */
export async function readAllPages(
  api: TestApi,
  token: string,
  query: Record<string, string | number | boolean | undefined> = {},
): Promise<{ servers: Record<string, unknown>[]; total: number; pages: number }> {
  const servers: Record<string, unknown>[] = [];
  let cursor = query.cursor === undefined ? undefined : String(query.cursor);
  let total: number | undefined;
  let pages = 0;
  do {
    const { status, body } = await getRegistry(api, token, { ...query, cursor });
    expect(status).toBe(200);
    expect(body.received).toBe(body.servers.length);
    expect(body).not.toHaveProperty("cursor");
    total ??= body.total;
    expect(body.total).toBe(total as number);
    servers.push(...body.servers);
    cursor = body.next_cursor;
    if (cursor !== undefined) expect(typeof cursor).toBe("string");
    pages++;
  } while (cursor);
  return { servers, total: total ?? 0, pages };
}

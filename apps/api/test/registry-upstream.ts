import { join } from "node:path";

/**
 * A stand-in for the public MCP registry's read API, for tests and benchmarks: a real
 * HTTP server speaking its protocol over entries kept in memory, which tests change
 * (publish, deprecate, delete) and make fail.
 *
 * `GET /v0.1/servers?cursor=&limit=&search=&updated_since=&version=latest` answers
 * `{servers, metadata: {nextCursor?, count}}`: `limit` 1-100 (default 30, otherwise 422),
 * `search` a case-insensitive substring of the name, `updated_since` entries updated
 * strictly after an RFC 3339 time, `version=latest` the latest versions only; paging by
 * `(name, version)` after the cursor `"<name>:<version>"`, `nextCursor` only on a full
 * page; no total. Every status is listed, `deleted` included.
 */

export const OFFICIAL = "io.modelcontextprotocol.registry/official";

export interface OfficialMeta {
  status: string;
  statusChangedAt: string;
  publishedAt: string;
  updatedAt: string;
  isLatest: boolean;
}

export interface UpstreamItem {
  server: { name: string; version: string; description?: string; [field: string]: unknown };
  _meta: { [OFFICIAL]: OfficialMeta; [key: string]: unknown };
}

/** How a failing stand-in answers: 200 with text that is not JSON, JSON that is no page, a 503, or nothing in time. */
export type FailureMode = "garbage" | "not-a-page" | "status" | "hang";

export interface StandInRegistry {
  url: string;
  /** Every request to the servers list, in order. */
  requests: URL[];
  /** The entries, sorted by name then version. */
  items(): UpstreamItem[];
  /** Publishes a version, updated now (or `at`): the latest of its name, whose previous latest stops being latest. */
  publish(server: UpstreamItem["server"], at?: Date): UpstreamItem;
  /** Changes a version's status (`active`, `deprecated`, `deleted`), updated now (or `at`). */
  setStatus(name: string, version: string, status: string, at?: Date): void;
  /**
   * Fails list requests from now on: after `after` more requests served normally, the next
   * `times` ones (default: all) answer as `mode` says.
   */
  fail(mode: FailureMode, options?: { after?: number; times?: number }): void;
  /** Serves normally again. */
  heal(): void;
  /** Stops listening: connections are refused until `comeOnline`. */
  goOffline(): Promise<void>;
  /** Listens again, on the same port. */
  comeOnline(): void;
  stop(): Promise<void>;
}

const SNAPSHOT = join(import.meta.dir, "fixtures", "mcp-registry-servers.json");

/** The 464 real entries of the fixture, a fresh copy each call. */
export async function loadRegistrySnapshot(): Promise<UpstreamItem[]> {
  return (await Bun.file(SNAPSHOT).json()) as UpstreamItem[];
}

/** `count` entries from the snapshot, repeated with distinct names (`<name>-copy<n>`), sorted. */
export function multiplySnapshot(snapshot: UpstreamItem[], count: number): UpstreamItem[] {
  const items: UpstreamItem[] = [];
  for (let copy = 0; items.length < count; copy++) {
    for (const item of snapshot) {
      if (items.length >= count) break;
      const name = copy === 0 ? item.server.name : `${item.server.name}-copy${copy}`;
      items.push(structuredClone({ ...item, server: { ...item.server, name } }));
    }
  }
  return items.sort(byKey);
}

function byKey(a: UpstreamItem, b: UpstreamItem): number {
  const [x, y] = [a.server, b.server];
  if (x.name !== y.name) return x.name < y.name ? -1 : 1;
  if (x.version !== y.version) return x.version < y.version ? -1 : 1;
  return 0;
}

const problem = (status: number, detail: string) =>
  Response.json({ title: "Unprocessable Entity", status, detail }, { status });

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

export async function startStandInRegistry(initial?: UpstreamItem[]): Promise<StandInRegistry> {
  const entries = (initial ?? (await loadRegistrySnapshot())).slice().sort(byKey);
  const requests: URL[] = [];
  let failure: { mode: FailureMode; after: number; times: number } | undefined;
  const hanging = new Set<() => void>();

  function list(url: URL): Response {
    const params = url.searchParams;
    const limitText = params.get("limit") ?? "30";
    const limit = /^\d+$/.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(limit >= 1 && limit <= 100)) return problem(422, "limit must be between 1 and 100");
    const since = params.get("updated_since");
    if (since !== null && !RFC3339.test(since)) return problem(422, "updated_since must be an RFC 3339 time");
    const cursor = params.get("cursor");
    const separator = cursor?.indexOf(":") ?? -1;
    if (cursor && separator < 1) return problem(422, "invalid cursor");
    const search = params.get("search")?.toLowerCase();
    const version = params.get("version");
    const sinceMs = since === null ? undefined : Date.parse(since);
    const after = cursor ? { name: cursor.slice(0, separator), version: cursor.slice(separator + 1) } : undefined;
    const matches = entries.filter(({ server, _meta }) => {
      const meta = _meta[OFFICIAL];
      if (search && !server.name.toLowerCase().includes(search)) return false;
      if (sinceMs !== undefined && !(Date.parse(meta.updatedAt) > sinceMs)) return false;
      if (version === "latest" ? !meta.isLatest : version !== null && server.version !== version) return false;
      if (after && byKey({ server, _meta }, { server: after, _meta }) <= 0) return false;
      return true;
    });
    const page = matches.slice(0, limit);
    const last = page.at(-1);
    const metadata: { count: number; nextCursor?: string } = { count: page.length };
    if (page.length === limit && last) metadata.nextCursor = `${last.server.name}:${last.server.version}`;
    return Response.json({ servers: page, metadata });
  }

  function failing(): FailureMode | undefined {
    if (!failure) return undefined;
    if (failure.after > 0) {
      failure.after--;
      return undefined;
    }
    if (failure.times <= 0) return undefined;
    failure.times--;
    return failure.mode;
  }

  const serve = (port: number) =>
    Bun.serve({
      port,
      hostname: "127.0.0.1",
      fetch: answer,
    });

  async function answer(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname !== "/v0.1/servers" || request.method !== "GET") return problem(404, "not found");
    requests.push(url);
    switch (failing()) {
      case "garbage":
        return new Response("<html>upstream maintenance</html>", { headers: { "content-type": "text/html" } });
      case "not-a-page":
        return Response.json({ servers: "none", metadata: {} });
      case "status":
        return problem(503, "unavailable");
      case "hang":
        await new Promise<void>((resolve) => hanging.add(resolve));
        return problem(503, "gave up");
      default:
        return list(url);
    }
  }
  let server = serve(0);
  const port = server.port ?? 0;

  function find(name: string, version: string): UpstreamItem {
    const item = entries.find((e) => e.server.name === name && e.server.version === version);
    if (!item) throw new Error(`the stand-in registry has no ${name} ${version}`);
    return item;
  }

  return {
    url: server.url.origin,
    requests,
    items: () => entries,
    publish(published, at = new Date()) {
      const time = at.toISOString();
      for (const other of entries) {
        const meta = other._meta[OFFICIAL];
        if (other.server.name === published.name && meta.isLatest) {
          meta.isLatest = false;
          meta.updatedAt = time;
        }
      }
      const item: UpstreamItem = {
        server: structuredClone(published),
        _meta: {
          [OFFICIAL]: { status: "active", statusChangedAt: time, publishedAt: time, updatedAt: time, isLatest: true },
        },
      };
      entries.push(item);
      entries.sort(byKey);
      return item;
    },
    setStatus(name, version, status, at = new Date()) {
      const meta = find(name, version)._meta[OFFICIAL];
      meta.status = status;
      meta.statusChangedAt = at.toISOString();
      meta.updatedAt = at.toISOString();
    },
    fail(mode, options = {}) {
      failure = { mode, after: options.after ?? 0, times: options.times ?? Number.POSITIVE_INFINITY };
    },
    heal() {
      failure = undefined;
      for (const release of hanging) release();
      hanging.clear();
    },
    async goOffline() {
      await server.stop(true);
    },
    comeOnline() {
      server = serve(port);
    },
    async stop() {
      for (const release of hanging) release();
      await server.stop(true);
    },
  };
}

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bearer, readBody, signUp } from "./accounts-helpers.ts";
import { runModes, startTestApi, type TestApi } from "./harness.ts";
import { invalidInput } from "./invalid-input.ts";
import { expectedEntry, getRegistry, readAllPages, reference } from "./registry-helpers.ts";
import { OFFICIAL, type StandInRegistry, startStandInRegistry } from "./registry-upstream.ts";

const BAD_LIMIT = invalidInput(["limit", "must be a whole number from 1 to 100"]);
const BAD_SINCE = invalidInput([
  "updated_since",
  "must be an RFC 3339 date-time with an offset, e.g. 2025-05-16T19:15:30Z",
]);
const BAD_CURSOR = invalidInput(["cursor", "is not a next_cursor of this query"]);

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`MCP registry mirror on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let upstream: StandInRegistry;
    let api: TestApi;
    let token: string;
    beforeAll(async () => {
      upstream = await startStandInRegistry();
      api = await startTestApi({ backend, redis, env: { MCP_REGISTRY_URL: upstream.url } });
      token = (await signUp(api, "registry")).auth.auth_token;
    }, 60_000);
    afterAll(async () => {
      await api?.stop();
      await upstream?.stop();
    });

    const syncNow = () => api.services.registry.sync.run();

    test("without a valid credential the answer is 401, and the upstream is not asked", async () => {
      const none = await api.request("/hub/mcp/registry");
      expect(none.status).toBe(401);
      expect(await readBody(none)).toEqual({ error: "missing credential" });
      const bad = await api.request("/hub/mcp/registry", { headers: bearer("not-a-token") });
      expect(bad.status).toBe(401);
      expect(typeof (await readBody(bad)).error).toBe("string");
      expect(upstream.requests).toHaveLength(0);
    });

    test("the first request fills the mirror from the upstream; every entry then pages through, in order, with an exact total", async () => {
      const first = await getRegistry(api, token);
      expect(first.status).toBe(200);
      expect(Object.keys(first.body).sort()).toEqual(["next_cursor", "received", "servers", "total"]);
      expect(first.body.received).toBe(30);
      expect(first.body.total).toBe(464);
      // A full sync: every page of the upstream, from the start, without updated_since.
      expect(upstream.requests.map((url) => url.searchParams.has("updated_since"))).toEqual(Array(5).fill(false));
      expect(upstream.requests[0]?.searchParams.has("cursor")).toBe(false);

      const all = await readAllPages(api, token, { limit: 100 });
      expect(all.pages).toBe(5);
      expect(all.total).toBe(464);
      expect(all.servers).toEqual(reference(upstream.items()));
      // Answered from the mirror: the upstream was not asked again.
      expect(upstream.requests).toHaveLength(5);
    });

    test("an entry is its server.json fields plus the registry's _meta; remotes are always there", async () => {
      const items = upstream.items();
      const remote = items.find((item) => Array.isArray(item.server.remotes));
      const packaged = items.find((item) => item.server.remotes === undefined && item.server.description === "");
      for (const item of [remote, packaged]) {
        if (!item) throw new Error("the snapshot lacks an entry of this kind");
        const { body } = await getRegistry(api, token, { search: item.server.name });
        expect(body.servers[0]).toEqual(expectedEntry(item));
      }
      expect((await getRegistry(api, token, { search: packaged?.server.name })).body.servers[0]).toMatchObject({
        description: "",
        remotes: [],
        packages: packaged?.server.packages,
        _meta: { [OFFICIAL]: { status: "active", isLatest: true } },
      });
    });

    test("search: every word, ignoring case, in the name or description; ranked; total exact", async () => {
      const longName = "io.github.modelcontextprotocol/servers";
      for (const search of [
        "slack",
        "GitHub",
        "postgres database",
        "Server MCP",
        "_",
        "100%",
        "git hub",
        longName,
        "zz-none",
      ]) {
        const expected = reference(upstream.items(), { search });
        const all = await readAllPages(api, token, { search, limit: 100 });
        expect({ search, total: all.total, names: all.servers.map((s) => s.name) }).toEqual({
          search,
          total: expected.length,
          names: expected.map((s) => s.name),
        });
        expect(all.servers).toEqual(expected);
      }
      // Ranked: the server named exactly so comes first, before names that only contain the words.
      const exact = upstream.items().find((item) => item.server.name.endsWith("/mcp-server-git"));
      if (exact) {
        const { body } = await getRegistry(api, token, { search: exact.server.name.toUpperCase() });
        expect(body.servers[0].name).toBe(exact.server.name);
      }
      // An empty search is no search.
      expect((await getRegistry(api, token, { search: "  " })).body.total).toBe(464);
    });

    test("limit: 30 by default, at most 100; anything else is a 400 naming it", async () => {
      expect((await getRegistry(api, token)).body.received).toBe(30);
      expect((await getRegistry(api, token, { limit: 100 })).body.received).toBe(100);
      expect((await getRegistry(api, token, { limit: 1 })).body.received).toBe(1);
      for (const limit of ["101", "0", "-1", "1.5", "abc", "1e3"]) {
        expect({ limit, ...(await getRegistry(api, token, { limit })) }).toEqual({
          limit,
          status: 400,
          body: BAD_LIMIT,
        });
      }
    });

    test("updated_since keeps servers updated at or after an RFC 3339 time, in any offset; anything else is a 400", async () => {
      const times = upstream
        .items()
        .map((item) => item._meta[OFFICIAL].updatedAt)
        .sort();
      const at = times[400] as string;
      const expected = reference(upstream.items(), { updatedSince: at });
      expect(expected.length).toBeGreaterThan(10);
      expect(expected.some((e) => (e._meta as Record<string, { updatedAt: string }>)[OFFICIAL]?.updatedAt === at)).toBe(
        true,
      );
      const all = await readAllPages(api, token, { updated_since: at, limit: 100 });
      expect(all.servers).toEqual(expected);
      const shifted = new Date(Date.parse(at) + 2 * 3600_000).toISOString().replace(".000Z", "+02:00");
      expect((await getRegistry(api, token, { updated_since: shifted })).body.total).toBe(expected.length);
      expect((await getRegistry(api, token, { updated_since: "2000-01-01T00:00:00.5Z" })).body.total).toBe(464);
      expect((await getRegistry(api, token, { updated_since: "2100-01-01T00:00:00Z" })).body).toEqual({
        servers: [],
        received: 0,
        total: 0,
      });
      for (const updated_since of [
        "yesterday",
        "2025-05-16",
        "2025-05-16T19:15:30",
        "2025-13-01T00:00:00Z",
        "1747422930",
      ]) {
        expect({ updated_since, ...(await getRegistry(api, token, { updated_since })) }).toEqual({
          updated_since,
          status: 400,
          body: BAD_SINCE,
        });
      }
    });

    test("an incremental sync asks for what changed since the last one: new versions, deprecated and deleted servers", async () => {
      const items = upstream.items();
      const [upgraded, deprecated, deleted] = [items[10], items[20], items[30]].map((item) => item?.server);
      if (!upgraded || !deprecated || !deleted) throw new Error("the snapshot is too small");
      const asked = upstream.requests.length;
      upstream.publish({
        ...upgraded,
        version: "2.0.0",
        remotes: [{ type: "streamable-http", url: "https://example.com/mcp" }],
      });
      upstream.publish({ name: "io.example/brand-new", version: "1.0.0", description: "A server published just now" });
      upstream.publish({ name: "io.example/undescribed", version: "0.1.0" });
      upstream.setStatus(deprecated.name, deprecated.version, "deprecated");
      upstream.setStatus(deleted.name, deleted.version, "deleted");

      expect(await syncNow()).toMatchObject({ kind: "incremental", resumed: false, pages: 1 });
      const since = upstream.requests.slice(asked).map((url) => url.searchParams.get("updated_since"));
      expect(since).toHaveLength(1);
      expect(Date.parse(since[0] as string)).toBeLessThanOrEqual(Date.parse("2025-05-16T19:17:06Z"));

      const all = await readAllPages(api, token, { limit: 100 });
      expect(all.total).toBe(464 + 3 - 1);
      expect(all.servers).toEqual(reference(upstream.items()));
      const versions = await getRegistry(api, token, { search: upgraded.name });
      expect(
        versions.body.servers.map((s: Record<string, Record<string, { isLatest: boolean }>>) => [
          s.version,
          s._meta?.[OFFICIAL]?.isLatest,
        ]),
      ).toEqual([
        [upgraded.version, false],
        ["2.0.0", true],
      ]);
      expect((await getRegistry(api, token, { search: deprecated.name })).body.servers[0]._meta[OFFICIAL].status).toBe(
        "deprecated",
      );
      expect((await getRegistry(api, token, { search: deleted.name })).body.total).toBe(0);
      expect((await getRegistry(api, token, { search: "io.example/undescribed" })).body.servers[0]).toMatchObject({
        description: "",
        remotes: [],
      });

      // Nothing new upstream: a sync writes nothing.
      expect(await syncNow()).toMatchObject({ kind: "incremental", changed: 0 });
    });

    test("latest_only keeps the latest version of each server; it takes true/false/1/0 only", async () => {
      const latest = await readAllPages(api, token, { latest_only: true, limit: 100 });
      expect(latest.servers).toEqual(reference(upstream.items(), { latestOnly: true }));
      expect(latest.total).toBe(reference(upstream.items()).length - 1);
      expect((await getRegistry(api, token, { latest_only: 1 })).body.total).toBe(latest.total);
      expect((await getRegistry(api, token, { latest_only: false })).body.total).toBe(latest.total + 1);
      expect((await getRegistry(api, token, { latest_only: 0 })).body.total).toBe(latest.total + 1);
      const bad = await getRegistry(api, token, { latest_only: "yes" });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toStartWith("invalid input: latest_only: ");
      const both = await readAllPages(api, token, {
        latest_only: true,
        search: "mcp server",
        updated_since: "2025-05-16T19:10:00Z",
      });
      expect(both.servers).toEqual(
        reference(upstream.items(), { latestOnly: true, search: "mcp server", updatedSince: "2025-05-16T19:10:00Z" }),
      );
    });

    test("a cursor goes on after the last entry shown whatever changed meanwhile, and belongs to its query", async () => {
      const query = { search: "mcp-server", limit: 10 };
      const first = await getRegistry(api, token, query);
      const shown = first.body.servers.map((s: { name: string }) => s.name);
      const cursor = first.body.next_cursor as string;
      const gone = upstream.items().find((item) => item.server.name === shown[2]);
      if (!gone) throw new Error("no entry to delete");
      upstream.setStatus(gone.server.name, gone.server.version, "deleted");
      upstream.publish({ name: "aaa.example/mcp-server-early", version: "1.0.0", description: "before the cursor" });
      upstream.publish({ name: "zzz.example/mcp-server-late", version: "1.0.0", description: "after the cursor" });
      await syncNow();

      const rest = await readAllPages(api, token, { ...query, cursor });
      const now = reference(upstream.items(), { search: query.search });
      const lastShown = now.findIndex((s) => s.name === shown[9]);
      expect(rest.servers).toEqual(now.slice(lastShown + 1));
      expect(rest.servers.map((s) => s.name)).toContain("zzz.example/mcp-server-late");
      expect(rest.total).toBe(now.length);
      expect(rest.total).toBe(first.body.total + 1);

      for (const other of [{ search: "mcp" }, { ...query, latest_only: true }, { ...query, search: undefined }]) {
        expect(await getRegistry(api, token, { ...other, cursor })).toEqual({ status: 400, body: BAD_CURSOR });
      }
      const forged = Buffer.from(JSON.stringify(["x", 1, "a", "b"])).toString("base64url");
      for (const bad of ["abc", "-1", forged, "%%%", "W10"]) {
        expect(await getRegistry(api, token, { ...query, cursor: bad })).toEqual({ status: 400, body: BAD_CURSOR });
      }
    });
  });
}

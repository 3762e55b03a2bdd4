import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type PeriodicJob, platformJobs, type Services } from "@platform/core";
import { bearer, signUp } from "./accounts-helpers.ts";
import { runModes, startPeerApi, startTestApi, type TestApi } from "./harness.ts";
import { getRegistry, readAllPages, reference } from "./registry-helpers.ts";
import { type StandInRegistry, startStandInRegistry } from "./registry-upstream.ts";

const UNPARSEABLE = { error: "the upstream registry returned a response that could not be parsed" };
const UNREACHABLE = { error: "the upstream registry could not be reached" };

function syncJob(services: Services): PeriodicJob {
  const job = platformJobs(services).find((candidate) => candidate.name === "hub-registry-sync");
  if (!job) throw new Error("the registry sync is not among the platform's jobs");
  return job;
}

const runJob = (services: Services) =>
  syncJob(services).run({ signal: new AbortController().signal, logger: services.logger });

async function mirrored(services: Services): Promise<number> {
  const row = await services.db
    .selectFrom("mcp_registry_servers")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** What a process that died mid-sync leaves behind: its lease, until the time given. */
async function leaseHeldByDeadProcess(services: Services, until: "in an hour" | "expired"): Promise<void> {
  await services.db
    .updateTable("mcp_registry_sync")
    .set({
      lease_owner: "a-process-that-died",
      lease_until: new Date(Date.now() + (until === "expired" ? -60_000 : 3_600_000)),
    })
    .execute();
}

for (const { backend, redis, label, skip } of runModes()) {
  describe.skipIf(Boolean(skip))(`MCP registry sync on ${label}${skip ? ` (skipped: ${skip})` : ""}`, () => {
    let upstream: StandInRegistry;
    let api: TestApi;
    let token: string;
    beforeAll(async () => {
      upstream = await startStandInRegistry();
      api = await startTestApi({
        backend,
        redis,
        env: { MCP_REGISTRY_URL: upstream.url, MCP_REGISTRY_TIMEOUT_MS: "500" },
      });
      token = (await signUp(api, "registry-sync")).auth.auth_token;
    }, 60_000);
    afterAll(async () => {
      await api?.stop();
      await upstream?.stop();
    });

    test("before any sync, an upstream answer that cannot be parsed is a 502 saying so, and nothing is mirrored", async () => {
      for (const mode of ["garbage", "not-a-page"] as const) {
        upstream.fail(mode);
        expect(await getRegistry(api, token)).toEqual({ status: 502, body: UNPARSEABLE });
      }
      upstream.fail("status");
      expect(await getRegistry(api, token)).toEqual({
        status: 502,
        body: { error: "the upstream registry answered with status 503" },
      });
      expect(await mirrored(api.services)).toBe(0);
    });

    test("before any sync, an upstream that refuses connections or does not answer in time is a 502", async () => {
      upstream.heal();
      await upstream.goOffline();
      try {
        expect(await getRegistry(api, token)).toEqual({ status: 502, body: UNREACHABLE });
      } finally {
        upstream.comeOnline();
      }
      upstream.fail("hang");
      expect(await getRegistry(api, token)).toEqual({ status: 502, body: UNREACHABLE });
      upstream.heal();
      expect(await mirrored(api.services)).toBe(0);
    });

    test("a first sync interrupted half-way resumes where it stopped, in another process once the first one's lease is gone", async () => {
      upstream.fail("status", { after: 2 });
      await expect(api.services.registry.sync.run()).rejects.toThrow("the upstream registry answered with status 503");
      expect(await mirrored(api.services)).toBe(200);
      const stoppedAt = upstream.requests.at(-1)?.searchParams.get("cursor") ?? "";
      expect(stoppedAt).not.toBe("");

      // The endpoint does not answer from a half-filled mirror: it goes on from there, and fails the same way.
      const asked = upstream.requests.length;
      expect((await getRegistry(api, token)).status).toBe(502);
      expect(upstream.requests.slice(asked).map((url) => url.searchParams.get("cursor"))).toEqual([stoppedAt]);

      upstream.heal();
      const peer = await startPeerApi(api);
      try {
        // A process that died while syncing holds the lease until it expires: nobody else syncs meanwhile.
        await leaseHeldByDeadProcess(api.services, "in an hour");
        expect(await peer.services.registry.sync.run()).toBe("busy");
        // A request waits a while for the sync another process holds, then says to come back.
        const waiting = await peer.request("/hub/mcp/registry", { headers: bearer(token) });
        expect(waiting.status).toBe(503);
        expect(waiting.headers.get("retry-after")).toBe("5");
        expect(await waiting.json()).toEqual({ error: "the registry mirror is being filled; try again shortly" });
        await leaseHeldByDeadProcess(api.services, "expired");

        const resumedFrom = upstream.requests.length;
        await runJob(peer.services);
        const resumed = upstream.requests.slice(resumedFrom);
        expect(resumed.map((url) => url.searchParams.get("cursor"))[0]).toBe(stoppedAt);
        expect(resumed).toHaveLength(3);
        expect(resumed.every((url) => url.searchParams.has("cursor") && !url.searchParams.has("updated_since"))).toBe(
          true,
        );
      } finally {
        await peer.stop();
      }
      expect(await mirrored(api.services)).toBe(464);
      const all = await readAllPages(api, token, { limit: 100 });
      expect(all.total).toBe(464);
      expect(all.servers).toEqual(reference(upstream.items()));
    });

    test("the periodic job syncs only when one is due; after the first, syncs are incremental", async () => {
      expect(await api.services.registry.sync.due(3_600_000)).toBe(false);
      const asked = upstream.requests.length;
      await runJob(api.services);
      expect(upstream.requests).toHaveLength(asked);

      expect(await api.services.registry.sync.due(1)).toBe(true);
      upstream.publish({ name: "io.example/late-arrival", version: "1.0.0", description: "published after the sync" });
      expect(await api.services.registry.sync.run()).toMatchObject({ kind: "incremental", changed: 1 });
      expect((await getRegistry(api, token, { search: "late-arrival" })).body.total).toBe(1);
      expect(upstream.requests.slice(asked).every((url) => url.searchParams.has("updated_since"))).toBe(true);
    });

    test("an upstream failing after the mirror was filled leaves the endpoint answering from the mirror", async () => {
      upstream.fail("garbage");
      await expect(api.services.registry.sync.run()).rejects.toThrow(UNPARSEABLE.error);
      const { status, body } = await getRegistry(api, token, { limit: 5 });
      expect(status).toBe(200);
      expect(body.total).toBe(465);
      upstream.heal();
    });
  });
}

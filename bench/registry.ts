/**
 * Searches of the MCP registry mirror (issue 10's target: p99 ≤ 20 ms per query at 16
 * connections, in both modes), over 10,000 mirrored entries: the real snapshot repeated
 * with distinct names, served by the tests' stand-in upstream and synced by the platform
 * itself. Each query runs with the per-process answer cache (the default) and without it
 * (MCP_REGISTRY_CACHE_MB=0: every request goes to the database), next to a trivial
 * `Bun.serve` measured in the same run.
 *
 *   bun bench/registry.ts [--seconds N] [--connections N] [--entries N]
 *
 * The platform runs as the README starts it, in processes of its own, NODE_ENV=production.
 * Scale-out runs when DATABASE_URL and REDIS_URL are set.
 */
import { loadRegistrySnapshot, multiplySnapshot, startStandInRegistry } from "../apps/api/test/registry-upstream.ts";
import { flag } from "./lib/args.ts";
import { type LoadResult, load, report } from "./lib/load.ts";
import { availableModes, type RunningPlatform, signUpForBench, startBaseline, startPlatform } from "./lib/platform.ts";

const SECONDS = flag("seconds", 10);
const CONNECTIONS = flag("connections", 16);
const ENTRIES = flag("entries", 10_000);

const snapshot = await loadRegistrySnapshot();
const items = multiplySnapshot(snapshot, ENTRIES);

/** 200 distinct words of the snapshot's descriptions, for searches no two neighbours repeat. */
const words = [
  ...new Set(
    snapshot.flatMap(
      (item) =>
        String(item.server.description ?? "")
          .toLowerCase()
          .match(/[a-z]{4,}/g) ?? [],
    ),
  ),
]
  .sort()
  .filter((_, i) => i % 7 === 0)
  .slice(0, 200);

async function get(platform: RunningPlatform, token: string, path: string) {
  const response = await fetch(`${platform.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: (await response.json()) as { total?: number; next_cursor?: string } };
}

/** Waits until the platform's mirror holds every entry; returns how long that took. */
async function filled(platform: RunningPlatform, token: string): Promise<number> {
  const started = performance.now();
  for (;;) {
    const { status, body } = await get(platform, token, "/hub/mcp/registry?limit=1");
    if (status === 200 && body.total === items.length) return performance.now() - started;
    if (status !== 200 && status !== 503) throw new Error(`the mirror did not fill: ${status} ${JSON.stringify(body)}`);
    await Bun.sleep(500);
  }
}

/** A cursor half-way through the mirror (pages of 100 to get there; the cursor does not hold the limit). */
async function middleCursor(platform: RunningPlatform, token: string): Promise<string> {
  let cursor = "";
  for (let page = 0; page < items.length / 200; page++) {
    const { body } = await get(platform, token, `/hub/mcp/registry?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
    cursor = body.next_cursor ?? "";
  }
  return cursor;
}

async function measure(platform: RunningPlatform, token: string): Promise<[string, LoadResult][]> {
  const headers = { authorization: `Bearer ${token}` };
  const cursor = await middleCursor(platform, token);
  const queries: [string, string][] = [
    ["first page, no query", "/hub/mcp/registry"],
    ["search 1 rare word (slack)", "/hub/mcp/registry?search=slack"],
    ["search a word in every name (github)", "/hub/mcp/registry?search=github"],
    ["search 2 words + latest_only", "/hub/mcp/registry?search=server%20database&latest_only=true"],
    ["updated_since", "/hub/mcp/registry?updated_since=2025-05-16T19:15:00Z"],
    ["a page half-way, by cursor", `/hub/mcp/registry?cursor=${cursor}`],
  ];
  const rows: [string, LoadResult][] = [];
  for (const [name, path] of queries) {
    rows.push([
      name,
      await load({ url: `${platform.url}${path}`, headers, connections: CONNECTIONS, durationSeconds: SECONDS }),
    ]);
  }
  rows.push([
    `${words.length} distinct searches in turn`,
    await load({
      url: `${platform.url}/hub/mcp/registry`,
      pathOf: (n) => `/hub/mcp/registry?search=${words[n % words.length]}`,
      headers,
      connections: CONNECTIONS,
      durationSeconds: SECONDS,
    }),
  ]);
  return rows;
}

const upstream = await startStandInRegistry(items);
const baseline = await startBaseline();
try {
  for (const mode of availableModes()) {
    for (const cache of ["cache", "no cache"] as const) {
      const platform = await startPlatform(mode, {
        MCP_REGISTRY_URL: upstream.url,
        ...(cache === "no cache" ? { MCP_REGISTRY_CACHE_MB: "0" } : {}),
      });
      try {
        const { token } = await signUpForBench(platform.url);
        const fillMs = await filled(platform, token);
        console.log(
          `\n${mode}, ${cache}: ${items.length} entries mirrored, ready after ${(fillMs / 1000).toFixed(1)} s`,
        );
        const rows = await measure(platform, token);
        const trivial = await load({ url: baseline.url, connections: CONNECTIONS, durationSeconds: SECONDS });
        report(
          `${mode} mode, answer ${cache}, ${items.length} entries, ${CONNECTIONS} connections, ${SECONDS} s each`,
          trivial,
          rows,
        );
      } finally {
        await platform.stop();
      }
    }
  }
} finally {
  await baseline.stop();
  await upstream.stop();
}

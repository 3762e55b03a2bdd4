/**
 * Authenticated requests of the storage and secrets areas, in both modes, next to a
 * trivial `Bun.serve` measured in the same run (issue 7's target, scale-out: each
 * ≥ 5,000 req/s with p99 ≤ 20 ms at 32 connections).
 *
 *   bun bench/storage.ts [--seconds N] [--connections N]
 *
 * The platform runs as the README starts it (embedded: `bun run start`; scale-out:
 * `start:api` + `start:worker` on DATABASE_URL and REDIS_URL), in processes of its own,
 * with NODE_ENV=production. Scale-out runs when both variables are set.
 */

import { flag } from "./lib/args.ts";
import { reportEveryMode } from "./lib/every-mode.ts";
import { type LoadResult, load } from "./lib/load.ts";
import { callApi, type RunningPlatform, signUpForBench } from "./lib/platform.ts";

const SECONDS = flag("seconds", 10);
const CONNECTIONS = flag("connections", 32);

async function measureMode(platform: RunningPlatform): Promise<[string, LoadResult][]> {
  const { token } = await signUpForBench(platform.url);
  const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  await callApi(platform, token, "PUT", "/storage/kv/bench", { description: "benchmark bucket" });
  await callApi(platform, token, "PUT", "/storage/kv/bench/keys/hot", { value: { n: 1, tags: ["a", "b"] } });
  await callApi(platform, token, "PUT", "/storage/streams/bench", { description: "benchmark stream" });
  await callApi(platform, token, "PUT", "/secrets/bench-secret", { value: "s3cr3t-value-for-the-benchmark" });
  const run = (path: string, options: Partial<Parameters<typeof load>[0]> = {}) =>
    load({
      url: `${platform.url}${path}`,
      headers: auth,
      connections: CONNECTIONS,
      durationSeconds: SECONDS,
      ...options,
    });
  const rows: [string, LoadResult][] = [];
  rows.push(["401 without credential (prices)", await run("/accounts/payment/prices", { headers: {} })]);
  rows.push(["authenticated GET prices", await run("/accounts/payment/prices")]);
  rows.push(["KV get", await run("/storage/kv/bench/keys/hot")]);
  rows.push([
    "KV put",
    await run("/storage/kv/bench/keys/hot", { method: "PUT", body: JSON.stringify({ value: { n: 2, tags: ["c"] } }) }),
  ]);
  rows.push([
    "stream publish",
    await run("/storage/streams/bench/messages", {
      method: "POST",
      body: JSON.stringify({ stream: "bench", subject: "orders.created", body: { id: 1, total: 4200 } }),
    }),
  ]);
  rows.push(["secret get", await run("/secrets/bench-secret")]);
  return rows;
}

await reportEveryMode({ connections: CONNECTIONS, seconds: SECONDS }, measureMode);

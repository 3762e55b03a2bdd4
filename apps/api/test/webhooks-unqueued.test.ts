import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { freeLoopbackPort, testEnv } from "@platform/db/testing";
import type { Subprocess } from "bun";
import { bearer, signUp } from "./accounts-helpers.ts";
import { flowsClient } from "./flows-helpers.ts";
import { startTestApi, type TestApi } from "./harness.ts";
import { type Caller, call } from "./storage-helpers.ts";

const redisServer = Bun.which("redis-server");
const skip = !testEnv.DATABASE_URL ? "DATABASE_URL is not set" : !redisServer ? "redis-server is not installed" : false;

/** A Redis of this suite's own, so that it can be stopped without touching anyone else's. */
function startRedis(port: number): Subprocess {
  if (!redisServer) throw new Error("redis-server is not installed");
  return Bun.spawn([redisServer, "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
    stdout: "ignore",
    stderr: "ignore",
  });
}

describe.skipIf(Boolean(skip))(
  `webhook ingress when the run cannot be queued (PostgreSQL + Redis)${skip ? ` (skipped: ${skip})` : ""}`,
  () => {
    let redis: Subprocess;
    let api: TestApi;
    let owner: Caller;
    beforeAll(async () => {
      const port = await freeLoopbackPort();
      redis = startRedis(port);
      const url = `redis://127.0.0.1:${port}`;
      for (let i = 0; i < 100; i++) {
        const probe = Bun.spawnSync(["redis-cli", "-u", url, "ping"]);
        if (probe.stdout.toString().trim() === "PONG") break;
        await Bun.sleep(50);
      }
      api = await startTestApi({ backend: "postgres", redis: true, env: { REDIS_URL: url } });
      const { auth } = await signUp(api, "unqueued");
      owner = { accountId: auth.account.id, headers: bearer(auth.auth_token) };
    }, 60_000);
    afterAll(async () => {
      await api?.stop();
      redis?.kill();
    });

    test("a delivery recorded but not queued (Redis down) is 503 with Retry-After and leaves no run behind", async () => {
      const flow = await flowsClient(api, owner.headers).created({
        name: "unqueued",
        trigger: { type: "webhook" },
        steps: [{ name: "echo", subject: "transform", payload: { id: "{{trigger.id}}" } }],
      });
      const deliver = (id: string) => api.request(`/webhooks/${flow.webhook.id}`, { method: "POST", json: { id } });
      const first = await deliver("before");
      expect(first.status).toBe(200);
      const { run_id: accepted } = (await first.json()) as { run_id: string };

      redis.kill("SIGKILL");
      await redis.exited;
      const refused = await deliver("during");
      expect({ status: refused.status, retryAfter: refused.headers.get("retry-after") }).toEqual({
        status: 503,
        retryAfter: "5",
      });
      expect(await refused.json()).toEqual({ error: "the delivery could not be recorded; retry later" });

      const runs = await call(api, owner, "GET", `/flows/${flow.id}/runs`);
      expect(runs.body.data.map((run: { id: string }) => run.id)).toEqual([accepted]);
    });
  },
);

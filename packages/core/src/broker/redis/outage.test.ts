import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freeLoopbackPort } from "@platform/db/testing";
import { DomainError } from "../../errors.ts";
import { eventually } from "../test-backends.ts";
import { createRedisBroker } from "./index.ts";

const redisServer = Bun.which("redis-server");

/** A Redis of this test's own, writing every command to its append-only file before answering. */
function startRedis(port: number, dir: string) {
  if (!redisServer) throw new Error("redis-server is not installed");
  const process = Bun.spawn(
    [
      redisServer,
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--dir",
      dir,
      "--appendonly",
      "yes",
      "--appendfsync",
      "always",
      "--save",
      "",
    ],
    { stdout: "ignore", stderr: "ignore" },
  );
  return process;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "resolved";
  } catch (error) {
    return error instanceof DomainError ? error.code : `other: ${String(error)}`;
  }
}

describe.skipIf(!redisServer)(
  `the Redis adapter through an outage${redisServer ? "" : " (skipped: redis-server is not installed)"}`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), "broker-outage-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    test("fails fast with `unavailable` while Redis is down, reconnects by itself, and loses nothing acknowledged", async () => {
      const port = await freeLoopbackPort();
      let server = startRedis(port, dir);
      const url = `redis://127.0.0.1:${port}`;
      const broker = await createRedisBroker(url);
      try {
        await eventually(async () => (await codeOf(broker.ping())) === "resolved");
        const appended: string[] = [];
        for (let i = 0; i < 5; i++) appended.push(await broker.append("acct", "orders", `order-${i}`));
        await broker.kvPut("acct", "b", "k", "v");

        server.kill("SIGKILL");
        await server.exited;
        await eventually(async () => (await codeOf(broker.ping())) === "unavailable");
        expect(await codeOf(broker.append("acct", "orders", "while down"))).toBe("unavailable");
        expect(await codeOf(broker.kvGet("acct", "b", "k"))).toBe("unavailable");
        expect(await codeOf(broker.readGroup("acct", "orders", "g", "c", { blockMs: 1000 }))).toBe("unavailable");
        expect(await codeOf(broker.allow("acct", "k", 1, 1))).toBe("unavailable");

        server = startRedis(port, dir);
        await eventually(async () => (await codeOf(broker.ping())) === "resolved", 10_000);
        const entries = await broker.readRange("acct", "orders");
        expect(entries.map((e) => e.id)).toEqual(appended);
        expect((await broker.kvGet("acct", "b", "k"))?.value).toBe("v");
      } finally {
        await broker.close();
        server.kill("SIGKILL");
        await server.exited;
      }
    }, 30_000);

    test("a broker created while Redis is down answers `unavailable` and connects once Redis is up", async () => {
      const port = await freeLoopbackPort();
      const broker = await createRedisBroker(`redis://127.0.0.1:${port}`);
      let server: ReturnType<typeof startRedis> | undefined;
      try {
        expect(await codeOf(broker.ping())).toBe("unavailable");
        expect(await codeOf(broker.append("acct", "s", "x"))).toBe("unavailable");
        server = startRedis(port, mkdtempSync(join(dir, "late-")));
        await eventually(async () => (await codeOf(broker.ping())) === "resolved", 10_000);
        expect(await broker.append("acct", "s", "x")).toMatch(/^\d+-\d+$/);
      } finally {
        await broker.close();
        server?.kill("SIGKILL");
        await server?.exited;
      }
    }, 30_000);
  },
);

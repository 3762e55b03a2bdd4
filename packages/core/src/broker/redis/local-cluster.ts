/// <reference path="../../types/cluster-key-slot.d.ts" />
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import calculateSlot from "cluster-key-slot";
import { Redis } from "ioredis";

/**
 * A Redis Cluster on loopback ports for tests: `primaries` primaries with one replica each,
 * without persistence, made with `redis-cli --cluster create` as an operator would. Tests
 * only: the platform never starts Redis.
 */
export interface LocalRedisCluster {
  /** `redis+cluster://` naming every node. */
  url: string;
  /** The primary that serves `slot` now, as host:port. */
  primaryOf(slot: number): Promise<string>;
  /** The replica of a primary. */
  replicaOf(primary: string): Promise<string>;
  /** Stops a node (SIGSTOP) until `resume`: it reads nothing, so its replication falls behind. */
  pause(node: string): void;
  resume(node: string): void;
  /** Writes `bytes` of filler to a node, a key of its own: a paused replica's backlog it cannot absorb. */
  fill(node: string, bytes: number): Promise<void>;
  /** Memory the primaries use for data (Σ `used_memory`), in bytes. */
  usedMemory(): Promise<number>;
  /** Kills every node: all of the cluster's data is gone. */
  loseEverything(): Promise<void>;
  /** Starts every node again, empty, on the same ports, and makes them a cluster again. */
  startEmpty(): Promise<void>;
  /** Kills a node (SIGKILL: it loses what it had not replicated). */
  kill(node: string): Promise<void>;
  /** Resolves when every slot is served by a primary that answers, every replica has synced, and the cluster says it is ok. */
  healthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Why a local cluster cannot be started here, or false. */
export function redisClusterMissing(): string | false {
  return Bun.which("redis-server") && Bun.which("redis-cli") ? false : "redis-server and redis-cli are not installed";
}

/** A free loopback port, as the kernel hands one out. */
/** Ports this process handed out: the kernel may offer a port again once its listener is closed. */
const handedOut = new Set<number>();

/** A free loopback port, as the kernel hands one out, never the same twice in this process. */
function freePort(): number {
  for (;;) {
    const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const { port } = listener;
    listener.stop(true);
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

/** Runs redis-cli; a call that takes longer than 30 s (a cluster that never joins) is killed and fails. */
async function cli(...args: string[]): Promise<string> {
  const child = Bun.spawn(["redis-cli", ...args], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  try {
    const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
    if ((await child.exited) !== 0) throw new Error(`redis-cli ${args.join(" ")} failed: ${err || out || "killed"}`);
    return out;
  } finally {
    clearTimeout(timer);
  }
}

const nodeArgs = (node: string) => {
  const [host, port] = node.split(":") as [string, string];
  return ["-h", host, "-p", port];
};

async function answers(node: string): Promise<boolean> {
  try {
    return (await cli(...nodeArgs(node), "ping")).trim() === "PONG";
  } catch {
    return false;
  }
}

/**
 * A shell that waits for this process to end, however it ends (a test runner's exit, a
 * timeout, SIGKILL), then kills the nodes named in `pidFile` and removes their files: a
 * shared cluster is never stopped by the suites that use it.
 */
function startWatchdog(pidFile: string, dir: string): Subprocess {
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -9 $(cat '${pidFile}') 2>/dev/null; rm -rf '${dir}' '${pidFile}'`;
  const watchdog = Bun.spawn(["sh", "-c", script], { stdout: "ignore", stderr: "ignore", stdin: "ignore" });
  watchdog.unref();
  return watchdog;
}

export async function startLocalRedisCluster(primaries = 3): Promise<LocalRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), "redis-cluster-"));
  const pidFile = `${dir}.pids`;
  const servers = new Map<string, Subprocess>();
  const nodes = Array.from({ length: primaries * 2 }, () => `127.0.0.1:${freePort()}`);
  // Each node's cluster bus port, chosen as well: the default (port + 10000) is past 65535
  // for a high ephemeral port, and may be in use.
  const busPorts = new Map(nodes.map((node) => [node, freePort()]));
  const killed = new Set<string>();

  const spawn = (node: string) => {
    const port = node.split(":")[1] as string;
    // A short node timeout: a replica is promoted about two seconds after its primary dies.
    const server = Bun.spawn(
      [
        "redis-server",
        "--port",
        port,
        "--cluster-port",
        String(busPorts.get(node)),
        "--bind",
        "127.0.0.1",
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        join(dir, `nodes-${port}.conf`),
        "--cluster-node-timeout",
        "1000",
        "--save",
        "",
        "--appendonly",
        "no",
        // Replicas sync at once rather than after the default 5 s wait for more of them.
        "--repl-diskless-sync-delay",
        "0",
        "--dir",
        dir,
      ],
      { stdout: "ignore", stderr: "ignore" },
    );
    // The test process may end without stopping it (a shared cluster): the watchdog kills it then.
    server.unref();
    servers.set(node, server);
    writeFileSync(pidFile, [...servers.values()].map((each) => each.pid).join(" "));
  };
  const killAll = async () => {
    for (const server of servers.values()) server.kill("SIGKILL");
    await Promise.all([...servers.values()].map((server) => server.exited));
  };
  /** Every node started empty (no cluster state either) and made into a cluster again. */
  const create = async () => {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    killed.clear();
    for (const node of nodes) spawn(node);
    for (const node of nodes) {
      while (!(await answers(node))) {
        const exited = servers.get(node)?.exitCode;
        if (exited !== null && exited !== undefined) throw new Error(`redis-server ${node} exited with ${exited}`);
        await Bun.sleep(20);
      }
    }
    await cli("--cluster", "create", ...nodes, "--cluster-replicas", "1", "--cluster-yes");
  };
  const watchdog = startWatchdog(pidFile, dir);
  const stop = async () => {
    watchdog.kill("SIGKILL");
    await killAll();
    rmSync(dir, { recursive: true, force: true });
    rmSync(pidFile, { force: true });
  };
  try {
    await create();
  } catch (error) {
    await stop();
    throw error;
  }

  const alive = () => nodes.filter((node) => servers.get(node)?.exitCode === null && !killed.has(node));

  /** The slot ranges and their primary, as a live node sees them. */
  const slotMap = async (): Promise<{ from: number; to: number; primary: string }[]> => {
    const [node] = alive();
    if (!node) throw new Error("no node of the cluster is alive");
    const lines = (await cli(...nodeArgs(node), "cluster", "nodes")).trim().split("\n");
    const ranges: { from: number; to: number; primary: string }[] = [];
    for (const line of lines) {
      const [, address, flags, , , , , , ...slots] = line.split(" ");
      if (!flags?.includes("master") || flags.includes("fail")) continue;
      const primary = (address as string).split("@")[0] as string;
      for (const range of slots) {
        const [from, to] = range.split("-").map(Number) as [number, number?];
        ranges.push({ from, to: to ?? from, primary });
      }
    }
    return ranges;
  };

  const cluster: LocalRedisCluster = {
    url: `redis+cluster://${nodes.join(",")}`,
    async primaryOf(slot) {
      const range = (await slotMap()).find((candidate) => slot >= candidate.from && slot <= candidate.to);
      if (!range) throw new Error(`no primary serves slot ${slot}`);
      return range.primary;
    },
    async replicaOf(primary) {
      const [node] = alive();
      if (!node) throw new Error("no node of the cluster is alive");
      const lines = (await cli(...nodeArgs(node), "cluster", "nodes")).trim().split("\n");
      const id = lines.find((line) => line.split(" ")[1]?.startsWith(`${primary}@`))?.split(" ")[0];
      const replica = lines.find((line) => line.split(" ")[3] === id);
      if (!id || !replica) throw new Error(`${primary} has no replica`);
      return (replica.split(" ")[1] as string).split("@")[0] as string;
    },
    pause(node) {
      servers.get(node)?.kill("SIGSTOP");
    },
    resume(node) {
      servers.get(node)?.kill("SIGCONT");
    },
    async fill(node, bytes) {
      const ranges = (await slotMap()).filter((range) => range.primary === node);
      const serves = (key: string) => {
        const slot = calculateSlot(key);
        return ranges.some((range) => slot >= range.from && slot <= range.to);
      };
      let n = 0;
      while (!serves(`filler-${n}`)) n++;
      const [host, port] = node.split(":") as [string, string];
      const client = new Redis({ host, port: Number(port), lazyConnect: true });
      try {
        await client.connect();
        await client.set(`filler-${n}`, Buffer.alloc(bytes, 120));
      } finally {
        client.disconnect();
      }
    },
    async usedMemory() {
      const primaries = [...new Set((await slotMap()).map((range) => range.primary))];
      const infos = await Promise.all(primaries.map((node) => cli(...nodeArgs(node), "info", "memory")));
      return infos.reduce((sum, info) => sum + Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? 0), 0);
    },
    async loseEverything() {
      await killAll();
    },
    async startEmpty() {
      await create();
      await cluster.healthy();
    },
    async kill(node) {
      killed.add(node);
      servers.get(node)?.kill("SIGKILL");
      await servers.get(node)?.exited;
    },
    async healthy(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const states = await Promise.all(
          alive().map((node) => cli(...nodeArgs(node), "cluster", "info").catch(() => "")),
        );
        const replication = await Promise.all(
          alive().map((node) => cli(...nodeArgs(node), "info", "replication").catch(() => "")),
        );
        // A replica that has not synced yet could not take over: healthy means every one has.
        const synced = replication.every(
          (info) => info.includes("role:master") || info.includes("master_link_status:up"),
        );
        const ok = synced && states.every((state) => state.includes("cluster_state:ok"));
        const served = ok ? (await slotMap()).reduce((sum, range) => sum + range.to - range.from + 1, 0) : 0;
        if (served === 16384 && ok) return;
        if (Date.now() > deadline) throw new Error("the cluster did not become healthy in time");
        await Bun.sleep(100);
      }
    },
    stop,
  };
  await cluster.healthy();
  return cluster;
}

let shared: Promise<LocalRedisCluster> | undefined;

/**
 * One cluster for every suite of this test process (suites keep apart by namespace, as
 * they do on the shared Redis); its nodes die with the process.
 */
export function sharedLocalRedisCluster(): Promise<LocalRedisCluster> {
  shared ??= startLocalRedisCluster();
  return shared;
}

import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadApiConfig } from "../src/config.ts";

const main = new URL("../src/main.ts", import.meta.url).pathname;
const dataDirs: string[] = [];
afterAll(() => {
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

function freshDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "platform-api-"));
  dataDirs.push(dir);
  return dir;
}

/**
 * Only what a developer's shell would pass, plus `extra`; never this run's DATABASE_URL.
 * The registry mirror's sync is pointed nowhere, so no test reaches the public registry.
 */
function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const { PATH = "", HOME = "" } = process.env;
  return { PATH, HOME, MCP_REGISTRY_URL: "http://127.0.0.1:9", ...extra };
}

async function runToExit(args: string[], env: Record<string, string>) {
  const child = Bun.spawn(["bun", main, ...args], { env: cleanEnv(env), stdout: "pipe", stderr: "pipe" });
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
  return { code, stderr };
}

describe("configuration", () => {
  test("a bad value stops start-up with one line naming the variable", async () => {
    const { code, stderr } = await runToExit(["--mode=embedded"], { PORT: "eighty", DATA_DIR: freshDataDir() });
    expect(code).toBe(2);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toContain("PORT");
  });

  test("scale-out mode without DATABASE_URL, REDIS_URL, signing keys and secrets key refuses to start and names them", async () => {
    const { code, stderr } = await runToExit(["--mode=scale-out"], {});
    expect(code).toBe(2);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toContain("DATABASE_URL");
    expect(stderr).toContain("REDIS_URL");
    expect(stderr).toContain("JWT_SIGNING_KEYS");
    expect(stderr).toContain("SECRETS_KEY");
  });

  test("an unreachable database stops start-up with one line saying so", async () => {
    const { code, stderr } = await runToExit(["--mode=embedded"], {
      DATABASE_URL: "postgres://postgres@127.0.0.1:9/nowhere",
      LOG_LEVEL: "silent",
    });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe("api failed to start: cannot migrate the database: connect ECONNREFUSED 127.0.0.1:9");
  });

  test("SECRETS_KEY takes one key or a kid:key list; a malformed one stops start-up naming it", () => {
    const key = () => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
    const bare = key();
    expect(loadApiConfig({ SECRETS_KEY: bare }, "embedded").core.secretsKey).toBe(bare);
    const list = `new:${key()},old:${key()},${bare}`;
    expect(loadApiConfig({ SECRETS_KEY: list }, "embedded").core.secretsKey).toBe(list);
    expect(() => loadApiConfig({ SECRETS_KEY: `a:${key()},a:${key()}` }, "embedded")).toThrow(
      "invalid configuration: SECRETS_KEY: lists a key id twice",
    );
    expect(() => loadApiConfig({ SECRETS_KEY: `a:${key().slice(1)}` }, "embedded")).toThrow(
      "invalid configuration: SECRETS_KEY: must be a 32-byte base64url key (43 characters) or kid:key[,kid:key...]",
    );
  });

  test("without PUBLIC_URL the public addresses follow PORT", () => {
    const config = loadApiConfig({ PORT: "8080" }, "embedded");
    expect(config.core.publicUrl).toBe("http://localhost:8080");
    expect(config.core.webhookBaseUrl).toBe("http://localhost:8080/webhooks");
  });

  test("defaults suit embedded mode and derive the public addresses from PUBLIC_URL", () => {
    const config = loadApiConfig({ PUBLIC_URL: "https://flows.example.com/" }, "embedded");
    expect(config.port).toBe(3000);
    expect(config.maxBodyBytes).toBe(10 * 1024 * 1024);
    expect(config.core.dataDir).toBe("./data");
    expect(config.core.webhookBaseUrl).toBe("https://flows.example.com/webhooks");
    expect(config.core.gatewayBaseUrl).toBe("https://flows.example.com/gw");
  });
});

describe("embedded process", () => {
  test("SIGTERM lets an in-flight request finish, refuses new ones, and exits 0", async () => {
    const child = Bun.spawn(["bun", main, "--mode=embedded"], {
      env: cleanEnv({ PORT: "0", HOST: "127.0.0.1", DATA_DIR: freshDataDir(), LOG_LEVEL: "info" }),
      stdout: "pipe",
      stderr: "inherit",
    });
    const lines = readLines(child.stdout);
    const listening = await nextMatching(lines, (entry) => entry.msg === "listening");
    const url = new URL(String(listening.url));
    expect(listening.database).toBe("pglite");

    // A first request warms the server up: until routes and handlers are built (a few hundred ms
    // on a busy machine, more with the in-process worker starting), a request may not have
    // reached its handler when the signal comes, and is closed unanswered.
    await fetch(`${url.origin}/monitoring/metrics/current`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });

    // A request whose body is still arriving when the signal comes.
    let finishBody: () => void = () => {};
    const bodyDone = new Promise<void>((resolve) => {
      finishBody = resolve;
    });
    const encoder = new TextEncoder();
    let sentHead = false;
    const inFlight = fetch(`${url.origin}/monitoring/metrics/current`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new ReadableStream({
        async pull(controller) {
          if (!sentHead) {
            sentHead = true;
            controller.enqueue(encoder.encode('{"metrics":'));
            return;
          }
          await bodyDone;
          controller.enqueue(encoder.encode("[]}"));
          controller.close();
        },
      }),
    });
    await Bun.sleep(200);
    child.kill("SIGTERM");
    await nextMatching(lines, (entry) => String(entry.msg).startsWith("shutting down"));
    expect(await canConnect(url.port)).toBe(false);
    finishBody();

    const response = await inFlight;
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ message: "metrics are required", data: null });
    expect(await child.exited).toBe(0);
  }, 30_000);
});

async function* readLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<Record<string, unknown>> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of stream) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline = buffered.indexOf("\n");
    while (newline >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf("\n");
      try {
        yield JSON.parse(line);
      } catch {
        // not a log line
      }
    }
  }
}

async function nextMatching(
  lines: AsyncGenerator<Record<string, unknown>>,
  matches: (entry: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  // Not `for await`: leaving that loop early would close the generator and the child's stdout.
  for (let next = await lines.next(); !next.done; next = await lines.next()) {
    if (matches(next.value)) return next.value;
  }
  throw new Error("the process ended before logging the expected line");
}

function canConnect(port: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port: Number(port) });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { matchesExpected, type Statement, statementsOf } from "./guide-walker.ts";
import { startTestApi, type TestApi } from "./harness.ts";
import { type McpUpstream, startMcpUpstream } from "./mcp-upstream.ts";
import { loadRegistrySnapshot, type StandInRegistry, startStandInRegistry } from "./registry-upstream.ts";

/** The guide's pages in reading order: later pages use what earlier ones made ($TOKEN, $FLOW, …). */
const PAGES = [
  "accounts",
  "secrets",
  "nodes",
  "flows",
  "runs",
  "flow-language",
  "webhooks",
  "storage",
  "gateways",
  "registry",
  "mcp",
  "limits",
];
const guide = new URL("../../../docs/guide/", import.meta.url).pathname;

/** One bash session: variables a statement sets are there for the next ones. */
class Shell {
  private readonly process;
  private readonly reader;
  private readonly decoder = new TextDecoder();
  private pending = "";

  constructor(
    private readonly outFile: string,
    env: Record<string, string>,
  ) {
    this.process = Bun.spawn(["bash", "--norc", "--noprofile"], {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "inherit",
      env: { ...process.env, ...env },
    });
    this.reader = this.process.stdout.getReader();
  }

  /** Runs a statement; answers its exit status and what it printed (stdout and stderr). */
  async run(command: string): Promise<{ code: number; output: string }> {
    this.process.stdin.write(`{ ${command}\n} > "${this.outFile}" 2>&1; echo "__DONE__ $?"\n`);
    await this.process.stdin.flush();
    for (;;) {
      const done = /__DONE__ (\d+)\n/.exec(this.pending);
      if (done) {
        this.pending = this.pending.slice(done.index + done[0].length);
        return { code: Number(done[1]), output: await Bun.file(this.outFile).text() };
      }
      const chunk = await this.reader.read();
      if (chunk.done) throw new Error("the shell ended");
      this.pending += this.decoder.decode(chunk.value, { stream: true });
    }
  }

  close() {
    this.process.stdin.end();
    this.process.kill();
  }
}

let api: TestApi;
let registry: StandInRegistry;
/** The MCP server the mcp page's steps call (`$MCP_SERVER`), on 127.0.0.1 (HTTP_REQUEST_ALLOWED_NETWORKS). */
let mcpServer: McpUpstream;
let shell: Shell;
let scratch: string;

beforeAll(async () => {
  registry = await startStandInRegistry(await loadRegistrySnapshot());
  mcpServer = startMcpUpstream();
  api = await startTestApi({
    backend: "pglite",
    worker: true,
    env: { MCP_REGISTRY_URL: registry.url, HTTP_REQUEST_ALLOWED_NETWORKS: "127.0.0.1" },
  });
  scratch = await mkdtemp(join(tmpdir(), "guide-"));
  shell = new Shell(join(scratch, "out"), { MCP_SERVER: mcpServer.url });
  await shell.run("set -o pipefail");
});

afterAll(async () => {
  shell?.close();
  await api?.stop();
  await registry?.stop();
  mcpServer?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** A curl whose answer is the statement's output (not piped on, not assigned): its status is checked. */
const answersItself = (command: string) => /^curl /.test(command) && !command.replace(/'[^']*'/g, "").includes("|");

/** The statement as the test runs it: against the test server, such a curl telling its status last. */
function runnable(statement: Statement): string {
  const command = statement.command.replaceAll("http://localhost:3000", api.url);
  return answersItself(command) ? command.replace(/^curl /, "curl -w '\\n%{http_code}' ") : command;
}

for (const page of PAGES) {
  test(`docs/guide/${page}.md: every command answers as the page says`, async () => {
    const statements = statementsOf(page, await Bun.file(`${guide}${page}.md`).text());
    const failures: string[] = [];
    for (const statement of statements) {
      const where = `${page}.md:${statement.line}: ${statement.command.split("\n")[0]}`;
      const { code, output } = await shell.run(runnable(statement));
      if (code !== 0) {
        failures.push(`${where}\n  exited ${code}: ${output.slice(0, 300)}`);
        continue;
      }
      if (!answersItself(statement.command)) continue;
      const cut = output.lastIndexOf("\n");
      const status = Number(output.slice(cut + 1));
      const body = output.slice(0, cut);
      const { status: expectedStatus, body: expectedBody } = statement.expected ?? {};
      const statusOk = expectedStatus === undefined ? status >= 200 && status < 300 : status === expectedStatus;
      if (!statusOk || (expectedBody !== undefined && !matchesExpected(expectedBody, body))) {
        failures.push(
          `${where}\n  expected ${expectedStatus ?? "2xx"} ${expectedBody ?? ""}\n  got      ${status} ${body.slice(0, 1500)}`,
        );
      }
    }
    expect(failures).toEqual([]);
    expect(statements.length).toBeGreaterThan(0);
  });
}

/**
 * The platform as an MCP client: `mcp.call` steps and the check of their arguments at save.
 * Tool lists (`tools/list`) are kept per account, server URL and hash of the headers sent,
 * for `LIST_TTL_MS`, at most `MAX_LISTS` of them: an account never sees a list read with
 * another account's credentials, nor with other credentials of its own.
 */
import { createHash } from "node:crypto";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import { parseNetwork } from "../safe-http/addresses.ts";
import { systemResolver } from "../safe-http/guard.ts";
import type { HttpRequestStepOptions } from "../safe-http/index.ts";
import { StepFailure } from "../step-failure.ts";
import type { StepContext } from "../step-functions.ts";
import { type McpCallPayload, parseMcpCallPayload } from "./payload.ts";
import { resolveRegistryServer } from "./registry-server.ts";
import { createSessions, type SessionTarget } from "./session.ts";
import { type ArgumentProblem, type ArgumentsCheck, compileArgumentsCheck } from "./tool-schemas.ts";

export const LIST_TTL_MS = 60_000;
export const MAX_LISTS = 1000;
/** Pages of `tools/list` read at most (a server that pages forever is cut short). */
const MAX_LIST_PAGES = 20;
/** Characters of a tool's error text kept in the step's error. */
const ERROR_TEXT_CHARS = 2000;

/** A server's tools by name: each one's arguments check. */
export type ToolTable = ReadonlyMap<string, ArgumentsCheck>;

export interface McpTools {
  /** Runs one `mcp.call` step with its resolved payload. */
  call(payload: unknown, context: Pick<StepContext, "accountId" | "signal" | "timeoutMs">): Promise<unknown>;
  /** The URL of a payload's server: as given, or a registry server's streamable-http remote. */
  serverUrl(server: McpCallPayload["server"]): Promise<string>;
  /** A server's tools as `accountId` sees them with `headers` (from the cache, or asked within `timeoutMs`). */
  tools(accountId: string, target: SessionTarget, signal: AbortSignal, timeoutMs: number): Promise<ToolTable>;
  /**
   * A server's tools as it describes them (name, description, input schema, ...), read afresh
   * through the same guard and session as a call; the list is kept for `accountId`'s calls.
   */
  describe(accountId: string, target: SessionTarget, signal: AbortSignal, timeoutMs: number): Promise<Tool[]>;
}

export interface McpToolsOptions {
  db: Kysely<Database>;
  /** The settings of `http.request`: the same address guard, response bound and CAs apply. */
  http: Pick<HttpRequestStepOptions, "allowPrivateNetwork" | "allowedNetworks" | "maxResponseBytes" | "resolve" | "ca">;
  listTtlMs?: number;
  maxLists?: number;
}

const headersHash = (headers: Record<string, string>) =>
  createHash("sha256")
    .update(
      JSON.stringify(
        Object.entries(headers)
          .map(([name, value]) => [name.toLowerCase(), value])
          .sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1)),
      ),
    )
    .digest("hex");

/** Problems of arguments as one line: `arguments.qty must be number; arguments.sku is required by the tool`. */
export const problemsText = (problems: ArgumentProblem[]) =>
  problems.map(({ field, message }) => `arguments${field ? `.${field}` : ""} ${message}`).join("; ");

/** The text of a tool's error result: its text blocks, else its content as JSON. */
function errorText(content: unknown): string {
  const blocks = Array.isArray(content) ? content : [];
  const texts = blocks
    .filter(
      (block): block is { type: "text"; text: string } => block?.type === "text" && typeof block.text === "string",
    )
    .map((block) => block.text);
  const text = texts.length > 0 ? texts.join("\n") : JSON.stringify(content ?? null);
  return text.length > ERROR_TEXT_CHARS ? `${text.slice(0, ERROR_TEXT_CHARS)}…` : text;
}

/** Every page of `tools/list` (at most MAX_LIST_PAGES). */
async function readTools(client: Client, signal: AbortSignal, timeoutMs: number): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const answer = await client.listTools(cursor ? { cursor } : undefined, { signal, timeout: timeoutMs });
    tools.push(...answer.tools);
    cursor = answer.nextCursor;
    if (!cursor) break;
  }
  return tools;
}

const tableOf = (tools: Tool[]): ToolTable =>
  new Map(tools.map((tool) => [tool.name, compileArgumentsCheck(tool.inputSchema)] as const));

export function createMcpTools(options: McpToolsOptions): McpTools {
  const ttl = options.listTtlMs ?? LIST_TTL_MS;
  const maxLists = options.maxLists ?? MAX_LISTS;
  const { http } = options;
  const withSession = createSessions({
    guard: {
      allowPrivateNetwork: http.allowPrivateNetwork,
      allowedNetworks: (http.allowedNetworks ?? []).map(parseNetwork),
      resolve: http.resolve ?? systemResolver,
    },
    maxResponseBytes: http.maxResponseBytes,
    ca: http.ca,
  });
  /** Lists by key, oldest first (a Map keeps insertion order). */
  const lists = new Map<string, { table: ToolTable; expires: number }>();
  /** Lists being read for a save, by key (at most one reading per key at a time). */
  const reading = new Map<string, Promise<ToolTable>>();

  const keyOf = (accountId: string, target: SessionTarget) =>
    `${accountId}\u0000${target.url}\u0000${headersHash(target.headers)}`;

  function cached(key: string): ToolTable | undefined {
    const entry = lists.get(key);
    if (!entry) return undefined;
    if (entry.expires > Date.now()) return entry.table;
    lists.delete(key);
    return undefined;
  }

  function keep(key: string, table: ToolTable): void {
    lists.delete(key);
    lists.set(key, { table, expires: Date.now() + ttl });
    while (lists.size > maxLists) {
      const oldest = lists.keys().next().value;
      if (oldest === undefined) break;
      lists.delete(oldest);
    }
  }

  async function listed(key: string, client: Client, signal: AbortSignal, timeoutMs: number): Promise<ToolTable> {
    const table = tableOf(await readTools(client, signal, timeoutMs));
    keep(key, table);
    return table;
  }

  const serverUrl: McpTools["serverUrl"] = (server) =>
    typeof server === "string" ? Promise.resolve(server) : resolveRegistryServer(options.db, server.registry);

  /** The tool's check, or a failure naming the tools the server has. */
  function checkOf(table: ToolTable, tool: string, url: string): ArgumentsCheck {
    const check = table.get(tool);
    if (check) return check;
    const names = [...table.keys()].slice(0, 20).join(", ");
    throw new StepFailure(`mcp.call: ${url} has no tool "${tool}" (its tools: ${names || "none"})`, false);
  }

  function checkArguments(check: ArgumentsCheck, tool: string, args: Record<string, unknown>): void {
    const problems = check(args);
    if (problems.length > 0) {
      throw new StepFailure(
        `mcp.call: the arguments do not fit the input schema of tool "${tool}": ${problemsText(problems)}`,
        false,
      );
    }
  }

  return {
    serverUrl,
    async tools(accountId, target, signal, timeoutMs) {
      const key = keyOf(accountId, target);
      const known = cached(key);
      if (known) return known;
      const pending = reading.get(key);
      if (pending !== undefined) return pending;
      // Steps of one save naming the same server share one reading of its list.
      const read = withSession(target, signal, timeoutMs, (client, requests) =>
        listed(key, client, requests, timeoutMs),
      ).finally(() => reading.delete(key));
      reading.set(key, read);
      return read;
    },
    describe(accountId, target, signal, timeoutMs) {
      return withSession(target, signal, timeoutMs, async (client, requests) => {
        const tools = await readTools(client, requests, timeoutMs);
        keep(keyOf(accountId, target), tableOf(tools));
        return tools;
      });
    },
    async call(payload, context) {
      const { server, tool, arguments: args, headers } = parseMcpCallPayload(payload);
      const { signal, timeoutMs } = context;
      const target = { url: await serverUrl(server), headers };
      const key = keyOf(context.accountId, target);
      const known = cached(key);
      // Arguments that do not fit a tool list already read fail before any request.
      if (known) checkArguments(checkOf(known, tool, target.url), tool, args);
      return withSession(target, signal, timeoutMs, async (client) => {
        if (!known) checkArguments(checkOf(await listed(key, client, signal, timeoutMs), tool, target.url), tool, args);
        const result = await client.callTool({ name: tool, arguments: args }, undefined, {
          signal,
          timeout: timeoutMs,
        });
        if ("toolResult" in result) return result.toolResult ?? null;
        if (result.isError)
          throw new StepFailure(`mcp.call: tool "${tool}" failed: ${errorText(result.content)}`, false);
        return result.structuredContent ?? result.content ?? null;
      });
    },
  };
}

/**
 * One short MCP session over Streamable HTTP: connect (initialize), use, end. The transport
 * fetches through the address guard (guarded-fetch.ts), never reconnects on its own, and is
 * closed whatever happens, its session ended on the server when it had one: a step leaves
 * no connection open. Failures become step failures that say whether another attempt may do
 * better.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { JsonSchemaValidator, jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import { messageOf } from "../../errors.ts";
import { StepFailure } from "../step-failure.ts";
import { createGuardedFetch, type GuardedFetchOptions } from "./guarded-fetch.ts";

export interface SessionTarget {
  url: string;
  headers: Record<string, string>;
}

/** How long ending a session on the server may take before the connection is dropped anyway. */
const END_SESSION_MS = 1000;

const CLIENT_INFO = { name: "workflow-platform", version: "1.0.0" };

/**
 * The SDK's client checks a tool's structured content against its output schema with an Ajv
 * of its own, built per client: a step outputs what the tool answered, so nothing is checked
 * (and no Ajv is built per call, nor keeps the schemas of every list it compiled).
 */
const acceptEverything: jsonSchemaValidator = {
  getValidator:
    <T>(): JsonSchemaValidator<T> =>
    (input) => ({ valid: true, data: input as T, errorMessage: undefined }),
};

/**
 * The transport opens a standalone stream (a GET) for messages the server sends unasked once
 * a session is initialized; a session of one call waits for none, so the GET is answered here
 * as a server without that stream answers it (405), and costs the server nothing.
 */
const withoutStandaloneStream =
  (fetch: FetchLike): FetchLike =>
  (input, init) =>
    (init?.method ?? "GET").toUpperCase() === "GET"
      ? Promise.resolve(new Response(null, { status: 405 }))
      : fetch(input, init);

/** JSON-RPC errors that another attempt of the same request meets again. */
const REFUSALS = new Set<number>([
  ErrorCode.InvalidParams,
  ErrorCode.InvalidRequest,
  ErrorCode.MethodNotFound,
  ErrorCode.ParseError,
]);

/** A failure of the session as a step failure naming the server (never its headers). */
export function sessionFailure(error: unknown, url: string): StepFailure {
  if (error instanceof StepFailure) return error;
  if (error instanceof McpError) {
    if (error.code === ErrorCode.RequestTimeout) return new StepFailure(`mcp.call: ${url} did not answer in time`);
    return new StepFailure(`mcp.call: ${url} answered an error: ${error.message}`, !REFUSALS.has(error.code));
  }
  if (error instanceof StreamableHTTPError) {
    const status = error.code ?? 0;
    const retryable = status === 0 || status >= 500 || status === 408 || status === 429;
    return new StepFailure(`mcp.call: ${url} answered ${status || "without a status"}: ${error.message}`, retryable);
  }
  return new StepFailure(`mcp.call: ${url} failed: ${messageOf(error)}`);
}

export function createSessions(options: GuardedFetchOptions) {
  /**
   * Connects to `target`, runs `use` with the client and the signal of its requests (aborted
   * as well when an answer's connection breaks), and ends the session; rejects with a step
   * failure (or the signal's reason once it aborted).
   */
  return async function withSession<T>(
    target: SessionTarget,
    signal: AbortSignal,
    timeoutMs: number,
    use: (client: Client, signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    signal.throwIfAborted();
    const broken = new AbortController();
    const guarded = createGuardedFetch(options, (error) => broken.abort(error));
    const requests = AbortSignal.any([signal, broken.signal]);
    const transport = new StreamableHTTPClientTransport(new URL(target.url), {
      fetch: withoutStandaloneStream(guarded.fetch),
      requestInit: { headers: target.headers },
      reconnectionOptions: {
        maxRetries: 0,
        initialReconnectionDelay: 1000,
        maxReconnectionDelay: 1000,
        reconnectionDelayGrowFactor: 1,
      },
    });
    const client = new Client(CLIENT_INFO, { jsonSchemaValidator: acceptEverything });
    // Errors of the transport's own background requests reach the request they belong to; nothing to log here.
    client.onerror = () => undefined;
    // The transport's requests share its own abort signal: closing it is what aborts them. A
    // session the server keeps is ended first (below), and the requests aborted then.
    const onAbort = () => {
      if (transport.sessionId === undefined) void transport.close().catch(() => undefined);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      await client.connect(transport, { signal: requests, timeout: timeoutMs });
      return await use(client, requests);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      const cause = guarded.refusal() ?? (broken.signal.aborted ? broken.signal.reason : error);
      throw sessionFailure(cause, target.url);
    } finally {
      signal.removeEventListener("abort", onAbort);
      if (transport.sessionId !== undefined) {
        await Promise.race([transport.terminateSession().catch(() => undefined), Bun.sleep(END_SESSION_MS)]);
      }
      await client.close().catch(() => undefined);
    }
  };
}

export type WithSession = ReturnType<typeof createSessions>;

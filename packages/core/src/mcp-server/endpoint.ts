import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { isApiKeyText } from "../accounts/api-keys.ts";
import { createAuthenticator } from "../accounts/authenticate.ts";
import { type Credential, type Principal, parseCredential, type RequestInfo } from "../caller.ts";
import { answerError } from "../errors.ts";
import { readUtf8Text } from "../request-body.ts";
import type { Services } from "../services.ts";
import { callTool, type ProgressReporter } from "./call.ts";
import { findTool, listTools, type ToolFlow } from "./catalog.ts";

/**
 * `/mcp`: the account's MCP endpoint (Streamable HTTP), where its flows marked as tools are
 * listed and called. It is stateless: every POST gets a server and a transport of its own,
 * keeps nothing between requests and so may land on any API process (no `Mcp-Session-Id`;
 * GET and DELETE, which serve sessions' streams and ends, are 405 as the transport specifies
 * for a server without them). An answer is JSON, or an SSE stream for a `tools/call` that asks
 * for progress (`_meta.progressToken`) or may wait longer than a silent connection lasts.
 *
 * The caller authenticates as on the API: `Authorization: Bearer` with an access token or an
 * API key (`X-Api-Key` works too). Without a valid credential: 401 with `WWW-Authenticate:
 * Bearer`. A key's `allowed_paths` are applied per tool (see catalog.ts), not to `/mcp`.
 */

const SERVER_INFO = { name: "workflow-platform", version: "1.0.0" };

/**
 * The JSON Schema validator every request's server shares: the SDK makes one per server
 * otherwise (a new Ajv with its formats, which cost more than the rest of a call), and this
 * endpoint asks clients for nothing it would validate (no elicitation).
 */
const SHARED_VALIDATOR = new AjvJsonSchemaValidator();

const INSTRUCTIONS =
  "Each tool is a flow of this account: a call starts a run with the arguments as its trigger data and answers the run's output. A run still going when the wait is over answers its id; follow it with GET /runs/{id}.";

/** The request's credential; a Bearer API key is read as one (MCP clients send one header, Authorization). */
function credentialOf(headers: Headers): Credential {
  const credential = parseCredential(headers);
  return credential?.scheme === "bearer" && isApiKeyText(credential.token)
    ? { scheme: "api_key", key: credential.token }
    : credential;
}

/** The authenticators of each process's services: the API's, without its per-path check of keys. */
const authenticators = new WeakMap<Services, ReturnType<typeof createAuthenticator>>();

function authenticate(services: Services, headers: Headers): Promise<Principal> {
  let authenticator = authenticators.get(services);
  if (!authenticator) {
    authenticator = createAuthenticator(services.accounts);
    authenticators.set(services, authenticator);
  }
  return authenticator(credentialOf(headers), null);
}

/** A JSON-RPC error about the request as a whole (it has no id to answer), as the transport words its own. */
function jsonRpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status, headers });
}

/**
 * A `tools/call` may wait WAIT_TIMEOUT_MS for its run. The request's connection is held open
 * that long (RequestInfo.holdOpen), but proxies and clients between close a connection silent
 * for their own time, often 10 s or more: the answer is a stream, which keep-alive comments
 * hold open, when the wait may pass this, or when the call asked for progress. A call of a
 * flow this process runs in place (engine/in-place.ts) is answered at once, as JSON.
 */
const SILENT_ANSWER_MAX_MS = 8000;
const KEEP_ALIVE_MS = 5000;

type CallMessage = { method?: unknown; params?: { name?: unknown; _meta?: { progressToken?: unknown } } };

/** Whether the answer to a message (or a batch) must be a stream (see `SILENT_ANSWER_MAX_MS`). */
async function answersAsStream(services: Services, principal: Principal, body: unknown): Promise<boolean> {
  const messages = (Array.isArray(body) ? body : [body]).filter(
    (message): message is CallMessage =>
      message !== null && typeof message === "object" && (message as CallMessage).method === "tools/call",
  );
  if (messages.some((message) => message.params?._meta?.progressToken !== undefined)) return true;
  if (messages.length === 0 || services.config.runs.waitTimeoutMs <= SILENT_ANSWER_MAX_MS) return false;
  for (const { params } of messages) {
    const tool = typeof params?.name === "string" ? await findTool(services, principal, params.name) : null;
    if (!tool || !services.runs.waitsInPlace(principal.accountId, tool.flowId, tool.revision)) return true;
  }
  return false;
}

const asTool = ({ tool, title }: ToolFlow): Tool => ({
  name: tool.tool,
  title,
  description: tool.description,
  inputSchema: tool.input_schema as Tool["inputSchema"],
  ...(tool.output_schema ? { outputSchema: tool.output_schema as Tool["outputSchema"] } : {}),
});

/** The MCP server of one request, for this principal. */
function toolServer(services: Services, principal: Principal, requestId: string): Server {
  // The low-level Server: the tools are the account's flows, read per request, with JSON Schemas of their own.
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: SHARED_VALIDATOR,
  });
  const failed = (error: unknown): never => {
    if (error instanceof McpError) throw error;
    services.logger.error({ reqId: requestId, err: error }, "MCP request failed");
    throw new McpError(ErrorCode.InternalError, "internal error");
  };

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    try {
      return { tools: (await listTools(services.db, principal)).map(asTool) };
    } catch (error) {
      return failed(error);
    }
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    try {
      const { name, arguments: args } = request.params;
      const tool = await findTool(services, principal, name);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `unknown tool: ${name}`);
      const progressToken = request.params._meta?.progressToken;
      const report: ProgressReporter | null =
        progressToken === undefined
          ? null
          : (progress, message) =>
              extra.sendNotification({
                method: "notifications/progress",
                params: { progressToken, progress, message },
              });
      return await callTool(services, principal, tool, args, report);
    } catch (error) {
      return failed(error);
    }
  });
  return server;
}

/** Answers a request to `/mcp` (any method). */
export async function handleMcpRequest(
  services: Services,
  request: Request,
  info: Pick<RequestInfo, "id" | "holdOpen">,
): Promise<Response> {
  const { logger } = services;
  const requestId = info.id;
  let principal: Principal;
  try {
    principal = await authenticate(services, request.headers);
  } catch (error) {
    const refused = answerError(error, { area: "platform", logger, requestId });
    if (refused.status === 401) {
      // RFC 6750, as the MCP authorization spec asks: the scheme, and why when a credential was sent.
      const sent = parseCredential(request.headers) !== null;
      refused.headers.set(
        "www-authenticate",
        sent ? 'Bearer realm="mcp", error="invalid_token"' : 'Bearer realm="mcp"',
      );
    }
    return refused;
  }
  if (request.method !== "POST") {
    return jsonRpcError(
      405,
      ErrorCode.ConnectionClosed,
      "Method not allowed: this server keeps no sessions (POST only)",
      {
        allow: "POST",
      },
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(await readUtf8Text(request));
  } catch (error) {
    if (error instanceof SyntaxError) return jsonRpcError(400, ErrorCode.ParseError, "Parse error: Invalid JSON");
    return answerError(error, { area: "platform", logger, requestId });
  }
  const streaming = await answersAsStream(services, principal, body).catch(() => true);
  info.holdOpen(services.config.runs.waitTimeoutMs);
  const server = toolServer(services, principal, requestId);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: !streaming,
    keepAliveMs: KEEP_ALIVE_MS,
  });
  await server.connect(transport);
  const response = await transport.handleRequest(request, { parsedBody: body });
  // A JSON answer is complete; a stream closes itself once the call's answer is written.
  if (!streaming) await server.close();
  return response;
}

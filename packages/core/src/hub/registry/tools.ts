/**
 * `POST /hub/mcp/registry/tools`: what a registry server offers, for a person picking a tool.
 * The server's latest version is asked at the remote an `mcp.call` step with
 * `server: {registry: name}` would call (its streamable-http remote), through the same MCP
 * client: the same address guard, response bound and session handling. The list is read
 * afresh each time (never answered from another request's list, whose headers may differ).
 */
import { streamableHttpRemote } from "../../engine/mcp-call/registry-server.ts";
import type { McpTools } from "../../engine/mcp-call/tools.ts";
import { DomainError, invalidInput } from "../../errors.ts";
import { knownHeaders } from "../../flows/mcp-check.ts";
import type { SecretsDeps } from "../../secrets/secrets.ts";
import type { RegistryTools, RegistryToolsInput } from "./schemas.ts";
import type { Registry } from "./service.ts";

/** The longest a request waits for a server's tools: under the HTTP server's 10 s idle timeout. */
export const MAX_TOOLS_WAIT_MS = 8000;

export interface RegistryToolsDeps extends SecretsDeps {
  registry: Pick<Registry, "latest">;
  mcp: Pick<McpTools, "describe">;
  /** How long the server may take to answer, in all (initialize and every page of `tools/list`). */
  timeoutMs: number;
}

/** The remotes of an entry in words, for the error that says none can be called. */
function remotesText(remotes: unknown): string {
  const list = Array.isArray(remotes) ? (remotes as { type?: unknown; url?: unknown }[]) : [];
  if (list.length === 0) return "it publishes no remote (only packages to run locally)";
  return `its remotes: ${list.map((remote) => `${String(remote?.type)} ${String(remote?.url)}`).join(", ")}`;
}

/** A step failure's text without the step's name in front: `mcp.call: ` is what a run's error shows. */
const reason = (error: unknown) => (error instanceof Error ? error.message : String(error)).replace(/^mcp\.call: /, "");

export async function listRegistryServerTools(
  deps: RegistryToolsDeps,
  accountId: string,
  input: RegistryToolsInput,
): Promise<RegistryTools> {
  const entry = await deps.registry.latest(input.name);
  if (!entry) throw new DomainError("not_found", `no server "${input.name}" in the MCP registry mirror`);
  const remote = streamableHttpRemote(entry.remotes);
  if (!remote || !/^https?:$/.test(new URL(remote.url).protocol)) {
    throw new DomainError(
      "conflict",
      `registry server "${input.name}" (version ${entry.version}) has no streamable-http remote at an http(s) URL to ask for its tools; ${remotesText(entry.remotes)}`,
    );
  }
  const headers = await knownHeaders(deps, accountId, input.headers);
  if (!headers) {
    throw invalidInput({
      path: "headers",
      message: "may hold text and {{secrets.<key>}} of the account's existing secrets only",
    });
  }
  const deadline = AbortSignal.timeout(deps.timeoutMs);
  try {
    // Each request's own limit is past the deadline: running out of time is told by the deadline alone.
    const tools = await deps.mcp.describe(accountId, { url: remote.url, headers }, deadline, deps.timeoutMs + 1000);
    return { data: { name: input.name, version: entry.version, remote, tools } };
  } catch (error) {
    if (deadline.aborted) {
      throw new DomainError(
        "timeout",
        `registry server "${input.name}" (${remote.url}) did not list its tools within ${deps.timeoutMs} ms`,
      );
    }
    throw new DomainError(
      "bad_gateway",
      `the tools of registry server "${input.name}" could not be read: ${reason(error)}`,
      {
        cause: error,
      },
    );
  }
}

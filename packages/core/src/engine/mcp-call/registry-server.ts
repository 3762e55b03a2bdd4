/** A server of the registry mirror as `mcp.call` reaches it: its latest version's streamable-http remote. */
import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import { StepFailure } from "../step-failure.ts";

interface Remote {
  type?: unknown;
  url?: unknown;
}

/** The first streamable-http remote of an entry's `remotes` with a URL (whose scheme the caller checks). */
export function streamableHttpRemote(remotes: unknown): { type: "streamable-http"; url: string } | undefined {
  const list = Array.isArray(remotes) ? (remotes as Remote[]) : [];
  const remote = list.find(
    (candidate) =>
      candidate?.type === "streamable-http" && typeof candidate.url === "string" && URL.canParse(candidate.url),
  );
  return remote ? { type: "streamable-http", url: remote.url as string } : undefined;
}

/** The URL of the streamable-http remote of the latest version of `name`; a step failure when there is none. */
export async function resolveRegistryServer(db: Kysely<Database>, name: string): Promise<string> {
  const row = await db
    .selectFrom("mcp_registry_servers")
    .select(["version", "entry"])
    .where("name", "=", name)
    .where("is_latest", "=", true)
    .executeTakeFirst();
  if (!row) throw new StepFailure(`mcp.call: no server "${name}" in the MCP registry mirror`, false);
  const remote = streamableHttpRemote(row.entry.remotes);
  if (!remote) {
    throw new StepFailure(
      `mcp.call: registry server "${name}" (version ${row.version}) has no streamable-http remote to call`,
      false,
    );
  }
  const url = remote.url;
  if (!/^https?:$/.test(new URL(url).protocol)) {
    throw new StepFailure(`mcp.call: registry server "${name}" has a remote that is not http(s): ${url}`, false);
  }
  return url;
}

import { z } from "zod";
import { isStorableJson } from "../../input-guard.ts";
import { readAtMost } from "../../read-at-most.ts";

/** The key of the registry's own metadata in an item's `_meta`. */
export const OFFICIAL_META = "io.modelcontextprotocol.registry/official";

export const UNPARSEABLE = "the upstream registry returned a response that could not be parsed";
export const UNREACHABLE = "the upstream registry could not be reached";

/** The upstream could not be used; the endpoint answers 502 with this message. */
export class UpstreamError extends Error {
  override name = "UpstreamError";
}

/** Largest upstream page read (a page holds at most 100 entries of a few KiB). */
const MAX_PAGE_BYTES = 32 * 1024 * 1024;
/** Longest name and version kept (the registry's own limits are 200 and 255). */
const MAX_NAME = 400;
const MAX_VERSION = 255;

const timestamp = z.string().refine((text) => !Number.isNaN(Date.parse(text)));

const item = z.object({
  server: z.looseObject({
    name: z.string().min(1).max(MAX_NAME),
    version: z.string().min(1).max(MAX_VERSION),
    description: z.string().optional(),
    // What the API's schema promises about an entry: one malformed entry never fails a page.
    remotes: z.array(z.looseObject({})).optional(),
    packages: z.array(z.looseObject({})).optional(),
    _meta: z.record(z.string(), z.unknown()).optional(),
  }),
  _meta: z.looseObject({
    [OFFICIAL_META]: z.looseObject({
      status: z.string().min(1).max(64),
      isLatest: z.boolean(),
      publishedAt: timestamp.optional(),
      updatedAt: timestamp.optional(),
      statusChangedAt: timestamp.optional(),
    }),
  }),
});

const page = z.object({
  servers: z.array(z.unknown()),
  metadata: z.looseObject({ nextCursor: z.string().min(1).nullish() }).optional(),
});

/** One server version as the mirror keeps it. */
export interface MirrorEntry {
  name: string;
  version: string;
  status: string;
  isLatest: boolean;
  publishedAt: Date | null;
  updatedAt: Date;
  /** What the API answers: the server.json fields (with `description` and `remotes` always present) plus `_meta`. */
  entry: Record<string, unknown>;
}

export interface UpstreamPage {
  entries: MirrorEntry[];
  nextCursor?: string;
  /** Items left out because they are not registry entries (logged by the caller). */
  skipped: number;
  /** The upstream's clock, from its `Date` header. */
  date?: Date;
}

export interface UpstreamQuery {
  cursor?: string;
  /** Entries updated strictly after this time. */
  updatedSince?: Date;
  limit: number;
}

export interface UpstreamOptions {
  /** Base address, without a trailing slash. */
  url: string;
  timeoutMs: number;
}

/** One page of `GET /v0.1/servers`; throws UpstreamError when it is unreachable or unusable. */
export async function fetchUpstreamPage(
  options: UpstreamOptions,
  query: UpstreamQuery,
  signal?: AbortSignal,
): Promise<UpstreamPage> {
  const url = new URL(`${options.url}/v0.1/servers`);
  url.searchParams.set("limit", String(query.limit));
  if (query.cursor) url.searchParams.set("cursor", query.cursor);
  if (query.updatedSince) url.searchParams.set("updated_since", query.updatedSince.toISOString());
  const timeout = AbortSignal.timeout(options.timeoutMs);
  let body: Uint8Array | null;
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: "application/json" },
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    body = response.body ? await readAtMost(response.body, MAX_PAGE_BYTES) : new Uint8Array();
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new UpstreamError(UNREACHABLE, { cause: error });
  }
  if (!response.ok) throw new UpstreamError(`the upstream registry answered with status ${response.status}`);
  if (body === null) throw new UpstreamError(UNPARSEABLE);
  let parsed: z.infer<typeof page>;
  try {
    parsed = page.parse(JSON.parse(new TextDecoder().decode(body)));
  } catch (error) {
    throw new UpstreamError(UNPARSEABLE, { cause: error });
  }
  const entries: MirrorEntry[] = [];
  for (const raw of parsed.servers) {
    const entry = toMirrorEntry(raw);
    if (entry) entries.push(entry);
  }
  const date = Date.parse(response.headers.get("date") ?? "");
  return {
    entries,
    nextCursor: parsed.metadata?.nextCursor ?? undefined,
    skipped: parsed.servers.length - entries.length,
    date: Number.isNaN(date) ? undefined : new Date(date),
  };
}

/** An upstream item in the mirror's terms, or undefined when it is not a usable entry. */
export function toMirrorEntry(raw: unknown): MirrorEntry | undefined {
  const result = item.safeParse(raw);
  if (!result.success) return undefined;
  const { server, _meta } = result.data;
  const official = _meta[OFFICIAL_META];
  const updated = official.updatedAt ?? official.statusChangedAt ?? official.publishedAt;
  if (!updated) return undefined;
  const entry: Record<string, unknown> = {
    ...server,
    description: server.description ?? "",
    remotes: server.remotes ?? [],
    _meta: { ...server._meta, ..._meta },
  };
  // An entry jsonb cannot hold (a NUL, a lone surrogate) is left out, not the whole sync.
  if (!isStorableJson(JSON.stringify(entry))) return undefined;
  return {
    name: server.name,
    version: server.version,
    status: official.status,
    isLatest: official.isLatest,
    publishedAt: official.publishedAt ? new Date(official.publishedAt) : null,
    updatedAt: new Date(updated),
    entry,
  };
}

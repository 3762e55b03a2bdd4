import { type NumberedEntry, QuotaExceeded } from "../../broker/port.ts";
import { invalidInput } from "../../errors.ts";
import { quotaError } from "../../limits/account-limits.ts";
import type { StorageDeps } from "../deps.ts";
import { boundedJson } from "../limits.ts";
import { findStream, retentionOf } from "./definitions.ts";
import { subjectMatcher } from "./subjects.ts";

/** Most messages one read answers. */
export const MAX_READ_LIMIT = 1000;
/**
 * Most messages one read looks at, matching its subject filter or not: a filter that
 * rarely matches answers a short (even empty) page with `next`, instead of scanning on.
 */
export const MAX_SCANNED_PER_READ = 2000;
/** Entries fetched per Broker call while a filter is looking for matches. */
const FILTERED_BATCH = 500;

export interface StreamMessage {
  seq: number;
  subject: string;
  body: Record<string, unknown>;
  /** When it was published, in epoch milliseconds. */
  ts: number;
}

/**
 * A message as one Broker payload: the subject, a newline, the body's JSON. Subjects hold
 * no newline, and a filter reads the subject without parsing the body.
 */
const encode = (subject: string, bodyJson: string) => `${subject}\n${bodyJson}`;

function subjectOf(payload: string): string {
  return payload.slice(0, payload.indexOf("\n"));
}

function decode(entry: NumberedEntry): StreamMessage {
  const split = entry.payload.indexOf("\n");
  return {
    seq: entry.seq,
    subject: entry.payload.slice(0, split),
    body: JSON.parse(entry.payload.slice(split + 1)),
    ts: entry.timestamp,
  };
}

export interface PublishInput {
  /** The stream named in the body; it must be the one in the path. */
  stream: string;
  subject: string;
  body: Record<string, unknown>;
}

/** Appends a message under the stream's retention and counts it; returns its sequence number. */
export async function publish(
  deps: StorageDeps,
  accountId: string,
  name: string,
  input: PublishInput,
): Promise<number> {
  if (input.stream !== name) {
    throw invalidInput({ path: "stream", message: "must be the stream named in the path" });
  }
  const bodyJson = boundedJson("body", input.body);
  const [stream, { plan, limits }] = await Promise.all([findStream(deps, accountId, name), deps.limits.of(accountId)]);
  // A stream whose max_messages is within the plan's limit is trimmed below it: no count to check.
  const keeps = stream.max_messages !== null && stream.max_messages <= limits.stream_messages;
  const seq = await deps.broker
    .appendNumbered(accountId, stream.id, encode(input.subject, bodyJson), retentionOf(stream), {
      maxBytes: limits.stream_bytes,
      maxEntries: keeps ? undefined : limits.stream_messages,
    })
    .catch((error: unknown) => {
      throw quotaError(
        error,
        error instanceof QuotaExceeded && error.quota === "entries" ? "stream_messages" : "stream_bytes",
        plan,
      );
    });
  deps.metrics.countStream(accountId, "stream.messages", name);
  deps.metrics.countStream(accountId, "stream.bytes", name, Buffer.byteLength(bodyJson));
  return seq;
}

export interface ReadQuery {
  /** Messages after this sequence number (default 0: from the oldest kept). */
  after?: number;
  limit?: number;
  /** A subject filter (see subjects.ts), already validated. */
  subject?: string;
}

export interface MessagesPage {
  data: StreamMessage[];
  /** Pass as `after` for the next page; null when the stream held nothing more. */
  next: number | null;
}

/**
 * Messages in sequence order, at most `limit`, looking at no more than
 * MAX_SCANNED_PER_READ of them. Messages past the stream's age limit are left out even
 * before the trim removes them.
 */
export async function readMessages(
  deps: StorageDeps,
  accountId: string,
  name: string,
  query: ReadQuery,
): Promise<MessagesPage> {
  const stream = await findStream(deps, accountId, name);
  const limit = query.limit ?? 100;
  const matches = query.subject === undefined ? () => true : subjectMatcher(query.subject);
  const oldestKept = stream.max_age_s === null ? 0 : Date.now() - stream.max_age_s * 1000;
  // Unfiltered, one entry more than the page shows whether there is a next page.
  const batch = query.subject === undefined ? limit + 1 : FILTERED_BATCH;

  const data: StreamMessage[] = [];
  let cursor = query.after ?? 0;
  let scanned = 0;
  let more = true;
  while (more && data.length < limit && scanned < MAX_SCANNED_PER_READ) {
    const size = Math.min(batch, MAX_SCANNED_PER_READ - scanned);
    const entries = await deps.broker.readNumbered(accountId, stream.id, { afterSeq: cursor, limit: size });
    more = entries.length === size;
    for (const entry of entries) {
      if (data.length === limit) {
        more = true;
        break;
      }
      cursor = entry.seq;
      scanned += 1;
      if (entry.timestamp >= oldestKept && matches(subjectOf(entry.payload))) data.push(decode(entry));
    }
  }
  return { data, next: more ? cursor : null };
}

import { createHash } from "node:crypto";
import { DomainError } from "../errors.ts";
import { isJsonMediaType, mediaTypeOf } from "./media-type.ts";

/** An uploaded file as a flow sees it; `content` (base64) only when the file is small enough to keep. */
export interface WebhookFile {
  name: string;
  type: string;
  size: number;
  sha256: string;
  content?: string;
}

/** A form field: a string, or every value in order when the name was sent more than once. */
export type FormValue = string | WebhookFile | (string | WebhookFile)[];

export interface ParsedWebhookBody {
  format: "json" | "form" | "multipart" | "empty";
  /** What goes at the top level of the trigger data. */
  fields: Record<string, unknown>;
}

export interface BodyParseOptions {
  /** Files up to this size keep their content (base64); larger ones keep only name, type, size and sha256. */
  maxFileContentBytes: number;
}

/** Deeper JSON is refused: flows' templates and the run store walk it recursively. */
export const MAX_BODY_DEPTH = 64;

const invalid = (message: string) => new DomainError("validation_error", message);

/**
 * Parses a delivery's raw bytes by their content type, throwing a DomainError the
 * ingress answers with: `validation_error` (400) for a malformed body,
 * `unsupported_media_type` (415) for a type other than these:
 *
 * - `application/json` (and `+json` types such as `application/cloudevents+json`): an
 *   object's fields go to the top level; any other JSON value is kept under `body`.
 * - `application/x-www-form-urlencoded` and `multipart/form-data`: one field per name;
 *   a name sent once is a string, a name sent several times an array of its values in
 *   order. Files become `{name, type, size, sha256, content?}`.
 * - An empty body is accepted whatever its type, with no fields.
 *
 * Strings holding NUL and JSON nested deeper than MAX_BODY_DEPTH are refused: the run
 * store (PostgreSQL jsonb) cannot keep the first, and the second is no event.
 */
export async function parseWebhookBody(
  raw: Uint8Array,
  contentType: string | null,
  options: BodyParseOptions,
): Promise<ParsedWebhookBody> {
  if (raw.byteLength === 0) return { format: "empty", fields: {} };
  const type = mediaTypeOf(contentType);
  if (isJsonMediaType(type)) {
    return { format: "json", fields: parseJson(raw) };
  }
  if (type === "application/x-www-form-urlencoded") {
    const text = new TextDecoder().decode(raw);
    return { format: "form", fields: groupFields(new URLSearchParams(text)) };
  }
  if (type === "multipart/form-data") {
    return { format: "multipart", fields: await parseMultipart(raw, contentType ?? "", options) };
  }
  throw new DomainError(
    "unsupported_media_type",
    `content type ${type || "(none)"} is not accepted: send application/json, application/x-www-form-urlencoded or multipart/form-data`,
  );
}

function parseJson(raw: Uint8Array): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(raw));
  } catch {
    throw invalid("body is not valid JSON");
  }
  assertStorable(value);
  return isPlainObject(value) ? value : { body: value };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Walks the value without recursion, so a hostile nesting cannot exhaust the stack. */
function assertStorable(value: unknown): void {
  const pending: [unknown, number][] = [[value, 0]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [item, depth] = next;
    if (typeof item === "string") {
      if (item.includes("\0")) throw invalid("body holds a NUL character, which cannot be stored");
    } else if (typeof item === "object" && item !== null) {
      if (depth >= MAX_BODY_DEPTH) throw invalid(`body nests deeper than ${MAX_BODY_DEPTH} levels`);
      for (const [key, child] of Object.entries(item)) {
        if (key.includes("\0")) throw invalid("body holds a NUL character, which cannot be stored");
        pending.push([child, depth + 1]);
      }
    }
  }
}

/** Groups form entries by name (see parseWebhookBody); built with fromEntries so `__proto__` stays a plain field. */
function groupFields<V extends string | WebhookFile>(entries: Iterable<[string, V]>): Record<string, FormValue> {
  const grouped = new Map<string, V[]>();
  for (const [name, value] of entries) {
    const text = typeof value === "string" ? value : `${value.name}${value.type}`;
    if (name.includes("\0") || text.includes("\0")) {
      throw invalid("body holds a NUL character, which cannot be stored");
    }
    const values = grouped.get(name);
    if (values) values.push(value);
    else grouped.set(name, [value]);
  }
  return Object.fromEntries(
    [...grouped].map(([name, values]) => [name, values.length === 1 ? (values[0] as V) : values]),
  );
}

/** Multipart goes through the web platform's own parser, over the exact bytes received. */
async function parseMultipart(
  raw: Uint8Array,
  contentType: string,
  options: BodyParseOptions,
): Promise<Record<string, FormValue>> {
  const form = await new Response(raw, { headers: { "content-type": contentType } }).formData().catch(() => {
    throw invalid("body is not valid multipart/form-data");
  });
  const entries: [string, string | WebhookFile][] = [];
  for (const [name, value] of form) {
    entries.push([name, typeof value === "string" ? value : await describeFile(value, options)]);
  }
  return groupFields(entries);
}

async function describeFile(file: File, options: BodyParseOptions): Promise<WebhookFile> {
  const bytes = Buffer.from(await file.arrayBuffer());
  const described: WebhookFile = {
    name: file.name,
    type: file.type || "application/octet-stream",
    size: bytes.byteLength,
    sha256: createHash("sha256").update(bytes).digest("hex"),
  };
  if (bytes.byteLength <= options.maxFileContentBytes) described.content = bytes.toString("base64");
  return described;
}

import { createHash } from "node:crypto";
import { DomainError, invalidInput } from "../errors.ts";
import { findUnsafeInput, MAX_INPUT_DEPTH } from "../input-guard.ts";
import { assertMultipartText, parseUrlencoded } from "./form-text.ts";
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
export const MAX_BODY_DEPTH = MAX_INPUT_DEPTH;

const invalid = (message: string) => new DomainError("validation_error", message);

/** What the web platform's decoders write for bytes that are not UTF-8. */
const REPLACEMENT = "\uFFFD";

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
 * What no run can store is refused, naming its field (see input-guard.ts): NUL characters
 * and lone surrogates in values and field names, numbers beyond a double, and JSON nested
 * deeper than MAX_BODY_DEPTH (no event needs it). So is text that is not UTF-8, never
 * replaced with U+FFFD: a JSON body, a form's names and values as sent or percent-encoded,
 * a multipart body's names, file names and text values (see form-text.ts).
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
    return { format: "form", fields: groupFields(parseUrlencoded(raw)) };
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

/** Refuses a body holding what no run can store (see input-guard.ts), naming its field (`body.<field>` in the text). */
function assertStorable(value: unknown): void {
  const problem = findUnsafeInput(value);
  if (problem) throw invalidInput(problem, { within: "body" });
}

/** Groups form entries by name (see parseWebhookBody); built with fromEntries so `__proto__` stays a plain field. */
function groupFields<V extends string | WebhookFile>(entries: Iterable<[string, V]>): Record<string, FormValue> {
  const grouped = new Map<string, V[]>();
  for (const [name, value] of entries) {
    const values = grouped.get(name);
    if (values) values.push(value);
    else grouped.set(name, [value]);
  }
  const fields = Object.fromEntries(
    [...grouped].map(([name, values]) => [name, values.length === 1 ? (values[0] as V) : values]),
  );
  assertStorable(fields);
  return fields;
}

/** Multipart goes through the web platform's own parser, over the exact bytes received. */
async function parseMultipart(
  raw: Uint8Array,
  contentType: string,
  options: BodyParseOptions,
): Promise<Record<string, FormValue>> {
  // The bytes were read from a request, never a SharedArrayBuffer (which the DOM's BodyInit, read by the console's compiler, refuses).
  const form = await new Response(raw as Uint8Array<ArrayBuffer>, { headers: { "content-type": contentType } })
    .formData()
    .catch(() => {
      throw invalid("body is not valid multipart/form-data");
    });
  const entries: [string, string | WebhookFile][] = [];
  let replaced = false;
  for (const [name, value] of form) {
    const text = typeof value === "string" ? value : value.name;
    replaced ||= name.includes(REPLACEMENT) || text.includes(REPLACEMENT);
    entries.push([name, typeof value === "string" ? value : await describeFile(value, options)]);
  }
  // The parser wrote U+FFFD for each byte that is not UTF-8: only then can one have been sent
  // (the character itself may be), so only then are the bytes read again.
  if (replaced) assertMultipartText(raw, contentType);
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

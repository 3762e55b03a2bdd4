import { parseTemplate, type TemplatePart, type TemplateReference, TemplateSyntaxError } from "./parse.ts";
import { encodeUrlValue } from "./url-encoding.ts";

/**
 * Payloads: JSON whose string values (at any depth, object keys excepted) may hold
 * template references. Checked when saved, resolved when a step runs.
 */

/** Where a string sits in a payload: object keys and array indexes from its top. */
export type FieldPath = (string | number)[];

export interface TemplateProblem {
  field: FieldPath;
  message: string;
}

export interface FieldReference {
  field: FieldPath;
  reference: TemplateReference;
}

/** What a run offers references: `trigger` data, each earlier step's output by name, secrets by key. */
export interface TemplateScope {
  trigger?: unknown;
  steps?: Record<string, unknown>;
  secrets?: Record<string, string>;
}

function visitStrings(value: unknown, field: FieldPath, visit: (text: string, field: FieldPath) => void): void {
  if (typeof value === "string") visit(value, field);
  else if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) visitStrings(item, [...field, index], visit);
  } else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) visitStrings(item, [...field, key], visit);
  }
}

/**
 * Every malformed reference in a payload (with the field it is in), and every reference
 * of the well-formed strings: flows check that `steps.<name>` names an earlier step and
 * `secrets.<key>` an existing secret.
 */
export function inspectPayload(payload: unknown): { problems: TemplateProblem[]; references: FieldReference[] } {
  const problems: TemplateProblem[] = [];
  const references: FieldReference[] = [];
  visitStrings(payload, [], (text, field) => {
    try {
      for (const part of parseTemplate(text)) {
        if (typeof part !== "string") references.push({ field, reference: part });
      }
    } catch (error) {
      if (!(error instanceof TemplateSyntaxError)) throw error;
      problems.push({ field, message: error.message });
    }
  });
  return { problems, references };
}

const ARRAY_INDEX = /^(0|[1-9]\d*)$/;

/** The value a reference names in the scope, or undefined when there is none. Own properties only. */
export function lookUp(scope: TemplateScope, reference: TemplateReference): unknown {
  let value: unknown = scope[reference.root];
  for (const segment of reference.path) {
    if (Array.isArray(value)) value = ARRAY_INDEX.test(segment) ? value[Number(segment)] : undefined;
    else if (value !== null && typeof value === "object" && Object.hasOwn(value, segment)) {
      value = (value as Record<string, unknown>)[segment];
    } else return undefined;
  }
  return value;
}

/** A value as it reads inside a longer string: missing and null as nothing, objects and arrays as JSON. */
function asText(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

function resolveString(text: string, scope: TemplateScope, url = false): unknown {
  const parts: TemplatePart[] = parseTemplate(text);
  const [only] = parts;
  // A string that is exactly one reference takes the value itself: an object stays an object.
  if (parts.length === 1 && only !== undefined && typeof only !== "string") return lookUp(scope, only) ?? null;
  if (url) return resolveUrl(parts, scope);
  return parts.map((part) => (typeof part === "string" ? part : asText(lookUp(scope, part)))).join("");
}

/** A reference whose value would make a URL's path segment `.` or `..`, which URL parsing resolves away. */
export class UrlTemplateError extends Error {
  override name = "UrlTemplateError";
}

/**
 * A URL with references in its text: each value is percent-encoded as RFC 6570 simple
 * expansion does (all but `A-Za-z0-9-._~`), so data lands inside the path segment or query
 * value where its reference stands and cannot add segments, parameters or a fragment
 * (`..%2F..%2Fadmin` stays one segment, `x?api_key=attacker&` one value). A value that
 * makes a whole path segment `.` or `..` is refused: URL parsing would still walk up.
 */
function resolveUrl(parts: TemplatePart[], scope: TemplateScope): string {
  let url = "";
  for (const [index, part] of parts.entries()) {
    if (typeof part === "string") {
      url += part;
      continue;
    }
    const value = encodeUrlValue(asText(lookUp(scope, part)));
    const next = parts[index + 1];
    const inPath = !/[?#]/.test(url);
    const wholeSegment =
      url.endsWith("/") && (next === undefined || (typeof next === "string" && /^([/?#]|$)/.test(next)));
    if (inPath && wholeSegment && (value === "." || value === "..")) {
      throw new UrlTemplateError(`{{${part.expression}}} would make the URL's path segment "${value}"`);
    }
    url += value;
  }
  return url;
}

export interface ResolveOptions {
  /** Top-level fields that hold a URL: references inside their text are encoded (see `resolveUrl`). */
  urlFields?: readonly string[];
}

/**
 * The payload with every reference replaced by its value. A string that is exactly one
 * reference becomes the value (any JSON type; null when missing); references inside
 * longer text are written into it (strings as they are, numbers and booleans as
 * `String()` writes them, objects and arrays as JSON, missing or null values as nothing),
 * percent-encoded in a URL field. `\{{` becomes `{{`. Throws TemplateSyntaxError on a
 * malformed reference, which `inspectPayload` finds when the payload is saved.
 */
export function resolvePayload(payload: unknown, scope: TemplateScope, options: ResolveOptions = {}): unknown {
  const { urlFields } = options;
  if (!urlFields || payload === null || typeof payload !== "object" || Array.isArray(payload)) {
    return resolveValue(payload, scope);
  }
  return Object.fromEntries(
    Object.entries(payload).map(([key, item]) => [
      key,
      typeof item === "string" && urlFields.includes(key)
        ? resolveString(item, scope, true)
        : resolveValue(item, scope),
    ]),
  );
}

function resolveValue(payload: unknown, scope: TemplateScope): unknown {
  if (typeof payload === "string") return resolveString(payload, scope);
  if (Array.isArray(payload)) return payload.map((item) => resolveValue(item, scope));
  if (payload !== null && typeof payload === "object") {
    return Object.fromEntries(Object.entries(payload).map(([key, item]) => [key, resolveValue(item, scope)]));
  }
  return payload;
}

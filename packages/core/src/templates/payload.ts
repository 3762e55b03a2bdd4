import { parseTemplate, type TemplatePart, type TemplateReference, TemplateSyntaxError } from "./parse.ts";

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

function resolveString(text: string, scope: TemplateScope): unknown {
  const parts: TemplatePart[] = parseTemplate(text);
  const [only] = parts;
  // A string that is exactly one reference takes the value itself: an object stays an object.
  if (parts.length === 1 && only !== undefined && typeof only !== "string") return lookUp(scope, only) ?? null;
  return parts.map((part) => (typeof part === "string" ? part : asText(lookUp(scope, part)))).join("");
}

/**
 * The payload with every reference replaced by its value. A string that is exactly one
 * reference becomes the value (any JSON type; null when missing); references inside
 * longer text are written into it (strings as they are, numbers and booleans as
 * `String()` writes them, objects and arrays as JSON, missing or null values as nothing).
 * `\{{` becomes `{{`. Throws TemplateSyntaxError on a malformed reference, which
 * `inspectPayload` finds when the payload is saved.
 */
export function resolvePayload(payload: unknown, scope: TemplateScope): unknown {
  if (typeof payload === "string") return resolveString(payload, scope);
  if (Array.isArray(payload)) return payload.map((item) => resolvePayload(item, scope));
  if (payload !== null && typeof payload === "object") {
    return Object.fromEntries(Object.entries(payload).map(([key, item]) => [key, resolvePayload(item, scope)]));
  }
  return payload;
}

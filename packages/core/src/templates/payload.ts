import { type CompiledExpression, compileExpression } from "./expressions.ts";
import {
  parseTemplate,
  type TemplateExpression,
  type TemplatePart,
  type TemplateReference,
  TemplateSyntaxError,
} from "./parse.ts";
import { encodeUrlValue } from "./url-encoding.ts";

/**
 * Payloads: JSON whose string values (at any depth, object keys excepted) may hold
 * templates. Checked when saved, compiled once per flow revision, resolved when a step runs.
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

/**
 * What a run offers templates: `trigger` data, each earlier step's output by name, secrets
 * by key, the run, and where they apply the for-each item and the failure being handled.
 */
export interface TemplateScope {
  trigger?: unknown;
  steps?: Record<string, unknown>;
  secrets?: Record<string, string>;
  run?: { id: string; flow_id: string; started_at: string | null };
  item?: unknown;
  index?: number;
  error?: { message: string; step: string };
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
 * Every malformed template in a payload (with the field it is in), and every reference
 * of the well-formed strings, the paths expressions read included: flows check that
 * `steps.<name>` names an earlier step and `secrets.<key>` a secret the saver may read.
 */
export function inspectPayload(payload: unknown): { problems: TemplateProblem[]; references: FieldReference[] } {
  const problems: TemplateProblem[] = [];
  const references: FieldReference[] = [];
  visitStrings(payload, [], (text, field) => {
    try {
      for (const part of parseTemplate(text)) {
        if (typeof part === "string") continue;
        if (part.kind === "path") references.push({ field, reference: part });
        else for (const reference of part.reads) references.push({ field, reference });
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

/** The scope of one resolution, with the values its expressions took. */
interface Resolution {
  scope: TemplateScope;
  values: Map<TemplateExpression, unknown>;
}

const templateValue = (part: TemplateReference | TemplateExpression, { scope, values }: Resolution) =>
  part.kind === "path" ? lookUp(scope, part) : values.get(part);

function resolveString(parts: TemplatePart[], resolution: Resolution, url = false): unknown {
  const [only] = parts;
  // A string that is exactly one template takes the value itself: an object stays an object.
  if (parts.length === 1 && only !== undefined && typeof only !== "string")
    return templateValue(only, resolution) ?? null;
  if (url) return resolveUrl(parts, resolution);
  return parts.map((part) => (typeof part === "string" ? part : asText(templateValue(part, resolution)))).join("");
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
function resolveUrl(parts: TemplatePart[], resolution: Resolution): string {
  let url = "";
  for (const [index, part] of parts.entries()) {
    if (typeof part === "string") {
      url += part;
      continue;
    }
    const value = encodeUrlValue(asText(templateValue(part, resolution)));
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

/** A payload parsed once: what a flow revision keeps of each step's payload. */
export interface CompiledPayload {
  /**
   * The payload with every template replaced by its value. A string that is exactly one
   * template becomes the value (any JSON type; null when missing); templates inside longer
   * text are written into it (strings as they are, numbers and booleans as `String()` writes
   * them, objects and arrays as JSON, missing or null values as nothing), percent-encoded in
   * a URL field. `\{{` becomes `{{`. Rejects with ExpressionEvaluationError when an
   * expression fails or exceeds its budget.
   */
  resolve(scope: TemplateScope, options?: ResolveOptions): Promise<unknown>;
}

/** A payload's part compiled to what writes its value for one resolution. */
type Writer = (resolution: Resolution) => unknown;

/**
 * Writes an object with the payload's keys, `__proto__` included (as an own key, which plain
 * assignment would not make).
 */
function objectWriter(entries: [string, Writer][]): Writer {
  return (resolution) => {
    const written: Record<string, unknown> = {};
    for (const [key, write] of entries) {
      if (key !== "__proto__") written[key] = write(resolution);
      else
        Object.defineProperty(written, key, {
          value: write(resolution),
          enumerable: true,
          writable: true,
          configurable: true,
        });
    }
    return written;
  };
}

/**
 * Parses every template string of a payload once and compiles its expressions once, and the
 * payload to a tree of writers: a resolution walks the payload's shape and nothing else (no
 * lookups of its strings, no entries of its objects). Throws TemplateSyntaxError on a
 * malformed template, which `inspectPayload` finds when the payload is saved.
 */
export function compilePayload(payload: unknown): CompiledPayload {
  const templates = new Map<string, TemplatePart[]>();
  const expressions: [TemplateExpression, CompiledExpression][] = [];
  const partsOf = (text: string): TemplatePart[] => {
    let parts = templates.get(text);
    if (parts === undefined) {
      parts = parseTemplate(text);
      templates.set(text, parts);
      for (const part of parts) {
        if (typeof part !== "string" && part.kind === "expression") {
          expressions.push([part, compileExpression(part.expression)]);
        }
      }
    }
    return parts;
  };
  const textWriter = (text: string, url: boolean): Writer => {
    const parts = partsOf(text);
    const [only] = parts;
    if (parts.length === 1 && typeof only === "string") return () => only;
    return (resolution) => resolveString(parts, resolution, url);
  };
  const writerOf = (value: unknown): Writer => {
    if (typeof value === "string") return textWriter(value, false);
    if (Array.isArray(value)) {
      const items = value.map(writerOf);
      return (resolution) => items.map((write) => write(resolution));
    }
    if (value !== null && typeof value === "object") {
      return objectWriter(Object.entries(value).map(([key, item]) => [key, writerOf(item)]));
    }
    return () => value;
  };
  /** An object payload's fields, each with its writer: the payload's writer, and each URL-field writer's start. */
  const topLevel =
    payload !== null && typeof payload === "object" && !Array.isArray(payload)
      ? Object.entries(payload).map(([key, item]) => ({ key, item, writer: writerOf(item) }))
      : [];
  const write =
    topLevel.length > 0 ? objectWriter(topLevel.map(({ key, writer }) => [key, writer])) : writerOf(payload);
  /** The writer of each set of URL fields asked for (one per step kind): its top-level strings among them written as `resolveUrl` does. */
  const urlWrites = new WeakMap<readonly string[], Writer>();
  const writeWithUrls = (urlFields: readonly string[]): Writer => {
    let urlWriter = urlWrites.get(urlFields);
    if (urlWriter === undefined) {
      urlWriter = objectWriter(
        topLevel.map(({ key, item, writer }) => [
          key,
          typeof item === "string" && urlFields.includes(key) ? textWriter(item, true) : writer,
        ]),
      );
      urlWrites.set(urlFields, urlWriter);
    }
    return urlWriter;
  };

  const none = new Map<TemplateExpression, unknown>();
  const evaluate = async (scope: TemplateScope): Promise<Map<TemplateExpression, unknown>> => {
    const values = new Map<TemplateExpression, unknown>();
    const [first] = expressions;
    if (expressions.length === 1 && first) values.set(first[0], await first[1].evaluate(scope));
    else {
      const taken = await Promise.all(expressions.map(([, compiled]) => compiled.evaluate(scope)));
      for (const [index, [part]] of expressions.entries()) values.set(part, taken[index]);
    }
    return values;
  };
  return {
    async resolve(scope, options = {}) {
      // Paths alone (the common case) need no evaluator.
      const resolution = { scope, values: expressions.length === 0 ? none : await evaluate(scope) };
      const { urlFields } = options;
      return (urlFields && topLevel.length > 0 ? writeWithUrls(urlFields) : write)(resolution);
    },
  };
}

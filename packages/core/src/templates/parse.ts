import { type ExpressionRead, ExpressionSyntaxError, parseExpression } from "./expressions.ts";

/**
 * Templates in payload strings: `{{ trigger.data.id }}`, `{{ steps.fetch.body.items.0 }}`,
 * `{{ secrets.stripe-key }}`, `{{ $sum(trigger.body.items.price) }}`.
 *
 * Syntax:
 * - `{{` opens a template and the next `}}` closes it; spaces inside the braces are ignored
 *   (an expression that needs `}}` writes `} }`).
 * - A plain path is a reference: a root (see TEMPLATE_ROOTS) followed by `.segment`s, each
 *   segment made of letters, digits, `_` and `-`; array elements are numeric segments
 *   (`items.0`). `steps.<name>` starts with the step's name; `secrets.<key>` is a key and
 *   nothing after it. A path is looked up directly, without an evaluator: the common case
 *   costs what it always did.
 * - Anything else is a JSONata expression (see expressions.ts), checked for syntax here.
 * - `\{{` writes a literal `{{`. A `}}` outside a template is plain text.
 */

/**
 * The names in scope: the trigger data, earlier steps' outputs, secrets, the run
 * (`id`, `flow_id`, `started_at`), the item and its index inside a for-each, and the
 * failure inside a `catch` or `on_failure` (`message`, `step`).
 */
export const TEMPLATE_ROOTS = ["trigger", "steps", "secrets", "run", "item", "index", "error"] as const;
export type TemplateRoot = (typeof TEMPLATE_ROOTS)[number];

export interface TemplateReference {
  kind: "path";
  root: TemplateRoot;
  /** The segments after the root: for `steps` the step name comes first, for `secrets` it is the key alone. */
  path: string[];
  /** The path as written between the braces, without spaces: `steps.fetch.body`. */
  expression: string;
}

export interface TemplateExpression {
  kind: "expression";
  /** As written between the braces, trimmed. */
  expression: string;
  /** The plain paths from a scope root it reads (`steps.<name>`, `secrets.<key>`), checked as references are. */
  reads: TemplateReference[];
}

/** A template is literal text, references and expressions, in order. */
export type TemplatePart = string | TemplateReference | TemplateExpression;

export class TemplateSyntaxError extends Error {
  override name = "TemplateSyntaxError";
}

const OPEN = "{{";
const CLOSE = "}}";
const ESCAPED_OPEN = "\\{{";
const SEGMENT = /^[A-Za-z0-9_-]+$/;

function isRoot(name: string): name is TemplateRoot {
  return (TEMPLATE_ROOTS as readonly string[]).includes(name);
}

/** Reads what is between the braces: a plain path, else an expression. Throws TemplateSyntaxError naming what is wrong. */
function parseReference(inner: string): TemplateReference | TemplateExpression {
  const expression = inner.trim();
  if (expression === "") throw new TemplateSyntaxError("empty template reference");
  const segments = expression.split(".");
  const [first = ""] = segments;
  const literal = segments.length === 1 && !isRoot(first) && (JSONATA_LITERALS.has(first) || /^\d+$/.test(first));
  if (literal || !segments.every((segment) => SEGMENT.test(segment))) return parseTemplateExpression(expression);
  return checkedPath(expression, segments);
}

const ROOT_LIST = TEMPLATE_ROOTS.join(", ");
/** Words that read like a path but are JSONata values: `{{true}}` is the boolean. */
const JSONATA_LITERALS = new Set(["true", "false", "null"]);

/** A path's root and its rules: `steps` needs a name, `secrets` exactly a key. */
function checkedPath(expression: string, [root = "", ...path]: string[]): TemplateReference {
  if (!isRoot(root)) {
    throw new TemplateSyntaxError(`unknown template root "${root}" in {{${expression}}} (${ROOT_LIST})`);
  }
  if (root === "steps" && path.length === 0) {
    throw new TemplateSyntaxError("{{steps}} needs a step name: {{steps.<name>}}");
  }
  if (root === "secrets" && path.length !== 1) {
    throw new TemplateSyntaxError(
      path.length === 0
        ? "{{secrets}} needs a key: {{secrets.<key>}}"
        : `{{${expression}}}: a secret is named by its key alone, nothing after it`,
    );
  }
  return { kind: "path", root, path, expression };
}

/**
 * An expression, checked for syntax; the paths it reads from a scope root follow the
 * rules of plain paths (a secret is read by its key: `secrets.token` or secrets.`my-key`).
 */
function parseTemplateExpression(expression: string): TemplateExpression {
  let reads: ExpressionRead[];
  try {
    reads = parseExpression(expression);
  } catch (error) {
    if (!(error instanceof ExpressionSyntaxError)) throw error;
    throw new TemplateSyntaxError(`invalid expression {{${expression}}}: ${error.message}`);
  }
  const references = reads
    .filter((read) => isRoot(read.root))
    .map((read) => {
      try {
        return checkedPath([read.root, ...read.path].join("."), [read.root, ...read.path]);
      } catch (error) {
        if (!(error instanceof TemplateSyntaxError)) throw error;
        throw new TemplateSyntaxError(`in {{${expression}}}: ${error.message}`);
      }
    });
  return { kind: "expression", expression, reads: references };
}

/**
 * Templates parsed lately, by text: a flow's templates are read by several checks when it is
 * saved and compiled again when it first runs, and an editor validates the same draft as its
 * user types; each distinct text is parsed once. The parts are shared: callers do not change them.
 */
const parsed = new Map<string, TemplatePart[] | TemplateSyntaxError>();
/** The characters of text the cache keeps at most (a tenant's text is counted wherever it is kept). */
const PARSED_MAX_CHARACTERS = 4_194_304;
let parsedCharacters = 0;

/** Splits a string into text and references; throws TemplateSyntaxError on the first malformed reference. */
export function parseTemplate(text: string): TemplatePart[] {
  if (!text.includes(OPEN)) return [text];
  let result = parsed.get(text);
  if (result === undefined) {
    try {
      result = splitTemplate(text);
    } catch (error) {
      if (!(error instanceof TemplateSyntaxError)) throw error;
      result = error;
    }
    if (parsedCharacters + text.length > PARSED_MAX_CHARACTERS) {
      parsed.clear();
      parsedCharacters = 0;
    }
    if (text.length <= PARSED_MAX_CHARACTERS) {
      parsed.set(text, result);
      parsedCharacters += text.length;
    }
  }
  if (result instanceof TemplateSyntaxError) throw result;
  return result;
}

function splitTemplate(text: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let literal = "";
  let at = 0;
  while (at < text.length) {
    const open = text.indexOf(OPEN, at);
    if (open === -1) {
      literal += text.slice(at);
      break;
    }
    if (open > 0 && text.startsWith(ESCAPED_OPEN, open - 1)) {
      literal += `${text.slice(at, open - 1)}${OPEN}`;
      at = open + OPEN.length;
      continue;
    }
    literal += text.slice(at, open);
    const close = text.indexOf(CLOSE, open + OPEN.length);
    const nested = text.indexOf(OPEN, open + OPEN.length);
    if (close === -1 || (nested !== -1 && nested < close)) throw new TemplateSyntaxError("unclosed template reference");
    if (literal) parts.push(literal);
    literal = "";
    parts.push(parseReference(text.slice(open + OPEN.length, close)));
    at = close + CLOSE.length;
  }
  if (literal || parts.length === 0) parts.push(literal);
  return parts;
}

/**
 * Template references in payload strings: `{{ trigger.data.id }}`, `{{ steps.fetch.body.items.0 }}`,
 * `{{ secrets.stripe-key }}`.
 *
 * Syntax, the one way to write a reference:
 * - `{{` opens a reference and the next `}}` closes it; spaces inside the braces are ignored.
 * - Inside is a path: a root (`trigger`, `steps` or `secrets`) followed by `.segment`s, each
 *   segment made of letters, digits, `_` and `-`. Array elements are numeric segments
 *   (`items.0`); `items[0]` is refused with a hint.
 * - `steps.<name>` starts with the step's name; `secrets.<key>` is a key and nothing after it.
 * - `\{{` writes a literal `{{`. A `}}` outside a reference is plain text.
 */

export const TEMPLATE_ROOTS = ["trigger", "steps", "secrets"] as const;
export type TemplateRoot = (typeof TEMPLATE_ROOTS)[number];

export interface TemplateReference {
  root: TemplateRoot;
  /** The segments after the root: for `steps` the step name comes first, for `secrets` it is the key alone. */
  path: string[];
  /** The path as written between the braces, without spaces: `steps.fetch.body`. */
  expression: string;
}

/** A template is literal text and references, in order. */
export type TemplatePart = string | TemplateReference;

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

/** Reads the path between the braces; throws TemplateSyntaxError naming what is wrong. */
function parseReference(inner: string): TemplateReference {
  const expression = inner.trim();
  if (expression === "") throw new TemplateSyntaxError("empty template reference");
  if (expression.includes("[")) {
    throw new TemplateSyntaxError(
      `invalid template reference {{${expression}}}: array indexes are written items.0, not items[0]`,
    );
  }
  const segments = expression.split(".");
  if (!segments.every((segment) => SEGMENT.test(segment))) {
    throw new TemplateSyntaxError(
      `invalid template reference {{${expression}}}: a path is segments of letters, digits, _ or - joined by dots`,
    );
  }
  const [root = "", ...path] = segments;
  if (!isRoot(root)) {
    throw new TemplateSyntaxError(`unknown template root "${root}" in {{${expression}}} (trigger, steps or secrets)`);
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
  return { root, path, expression };
}

/** Splits a string into text and references; throws TemplateSyntaxError on the first malformed reference. */
export function parseTemplate(text: string): TemplatePart[] {
  if (!text.includes(OPEN)) return [text];
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

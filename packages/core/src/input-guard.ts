/**
 * What no input may hold, whatever the procedure: checked once for every request, before
 * any schema runs, so no area can forget it.
 *
 * - NUL characters: PostgreSQL refuses them in text and in jsonb (keys too), so they would
 *   come back as a 500 from deep inside a query.
 * - Malformed UTF-16 (a lone surrogate): the database would store U+FFFD instead, silently
 *   changing the value.
 * - Nesting deeper than MAX_INPUT_DEPTH: no request needs it, and walking it costs stack.
 */

/** The deepest nesting of objects and arrays a request may carry. */
export const MAX_INPUT_DEPTH = 64;

/** Why a single string cannot be accepted, or undefined when it can. */
export function unsafeTextReason(text: string): string | undefined {
  if (text.includes("\u0000")) return "must not contain NUL characters";
  if (!text.isWellFormed()) return "must be valid Unicode text";
  return undefined;
}

const fieldName = (path: (string | number)[]) => (path.length ? path.join(".") : "body");

/**
 * The first problem found in a request's input, as `<field>: <reason>`, or undefined.
 * Field names are dotted paths (`data.payload.url`, `items.3`), as validation errors name them.
 */
export function findUnsafeInput(input: unknown): string | undefined {
  const walk = (value: unknown, path: (string | number)[]): string | undefined => {
    if (typeof value === "string") {
      const reason = unsafeTextReason(value);
      return reason && `${fieldName(path)}: ${reason}`;
    }
    if (value === null || typeof value !== "object") return undefined;
    if (path.length >= MAX_INPUT_DEPTH) return `${fieldName(path)}: nests deeper than ${MAX_INPUT_DEPTH} levels`;
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) {
        const found = walk(value[index], [...path, index]);
        if (found) return found;
      }
      return undefined;
    }
    for (const [key, child] of Object.entries(value)) {
      const keyReason = unsafeTextReason(key);
      if (keyReason) return `${fieldName(path)}: a field name ${keyReason}`;
      const found = walk(child, [...path, key]);
      if (found) return found;
    }
    return undefined;
  };
  return walk(input, []);
}

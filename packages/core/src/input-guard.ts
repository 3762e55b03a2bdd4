import type { Problem } from "./errors.ts";

/**
 * What no input may hold, whatever enters it (a REST or tRPC request, a webhook or gateway
 * body, the trigger data of a run): checked where it enters, before it reaches anything
 * shared. Runs of every account share statements, so a value PostgreSQL refuses would fail
 * the writes of other accounts' rows beside it.
 *
 * - NUL characters: PostgreSQL refuses them in text and in jsonb (keys too).
 * - Malformed UTF-16 (a lone surrogate, `"\ud800"` in JSON): jsonb refuses it, and text
 *   would store U+FFFD instead, silently changing the value.
 * - Numbers beyond a double (`1e400`): JSON.parse makes them Infinity, which JSON writes as
 *   `null`, silently changing the value.
 * - Nesting deeper than MAX_INPUT_DEPTH: no request needs it, and walking it costs stack.
 */

/** The deepest nesting of objects and arrays an input may carry. */
export const MAX_INPUT_DEPTH = 64;

/** Why a single string cannot be accepted, or undefined when it can. */
export function unsafeTextReason(text: string): string | undefined {
  if (text.includes("\u0000")) return "must not contain NUL characters";
  if (!text.isWellFormed()) return "must be valid Unicode text";
  return undefined;
}

/**
 * The first problem found in an input, or undefined. Its path is dotted (`data.payload.url`,
 * `items.3`), as validation errors name fields, and empty for the input as a whole. The path
 * is only spelled out for a problem: the walk of an acceptable input allocates none.
 */
export function findUnsafeInput(input: unknown): Problem | undefined {
  const path: (string | number)[] = [];
  const at = (message: string): Problem => ({ path: path.join("."), message });
  const walk = (value: unknown): Problem | undefined => {
    if (typeof value === "string") {
      const reason = unsafeTextReason(value);
      return reason === undefined ? undefined : at(reason);
    }
    if (typeof value === "number") {
      return Number.isFinite(value) ? undefined : at("must be a number a double can hold");
    }
    if (value === null || typeof value !== "object") return undefined;
    if (path.length >= MAX_INPUT_DEPTH) return at(`nests deeper than ${MAX_INPUT_DEPTH} levels`);
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) {
        path.push(index);
        const found = walk(value[index]);
        path.pop();
        if (found) return found;
      }
      return undefined;
    }
    for (const key of Object.keys(value)) {
      const keyReason = unsafeTextReason(key);
      if (keyReason) return at(`a field name ${keyReason}`);
      path.push(key);
      const found = walk((value as Record<string, unknown>)[key]);
      path.pop();
      if (found) return found;
    }
    return undefined;
  };
  return walk(input);
}

/** An escape PostgreSQL's jsonb refuses: `\u0000`, or a surrogate half, after an odd run of backslashes. */
const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|[dD][89a-fA-F])/;

/**
 * Whether JSON text written by `JSON.stringify` can be stored as jsonb: it writes NUL as
 * `\u0000` and a lone surrogate as `\udXXX` (a paired one as the character itself), so
 * those escapes are exactly what jsonb refuses. The last check before a statement, for
 * values no entry check saw (a step's output, say); a plain search first, since the
 * pattern is only worth running on the rare text that holds an escape at all.
 */
export function isStorableJson(json: string): boolean {
  return !json.includes("\\u") || !UNSTORABLE_ESCAPE.test(json);
}

import { encodeUrlValue } from "../templates/index.ts";

/**
 * The text of a step's failure as a run records it: whatever produced it (an upstream's
 * answer, a refused address, user code, a template), it leaves the step without the
 * secrets the step resolved, and as text PostgreSQL can store.
 */

/** Longest error text a run keeps; the start of a failure says what it was. */
export const MAX_ERROR_TEXT = 2000;

/** The spellings a value takes on its way into a request or an answer: as is, in a URL, in a form, in JSON. */
function spellings(value: string): string[] {
  const forms = new Set([
    value,
    encodeUrlValue(value),
    encodeURIComponent(value),
    new URLSearchParams({ v: value }).toString().slice(2),
    JSON.stringify(value).slice(1, -1),
    // Some serialisers (PHP's, say) escape slashes in JSON strings.
    JSON.stringify(value).slice(1, -1).replaceAll("/", "\\/"),
  ]);
  forms.delete("");
  return [...forms];
}

/**
 * `text` with every secret value the step resolved replaced by `[secret:<key>]`, in each
 * spelling it may have taken (longest first, so a value inside another is not half
 * replaced), made storable (no NUL, no lone surrogate) and cut to MAX_ERROR_TEXT.
 */
export function recordableErrorText(text: string, secrets?: Readonly<Record<string, string>>): string {
  let clean = text;
  if (secrets) {
    const replacements = Object.entries(secrets)
      .flatMap(([key, value]) => spellings(value).map((spelling) => [spelling, `[secret:${key}]`] as const))
      .sort(([a], [b]) => b.length - a.length);
    for (const [spelling, mark] of replacements) clean = clean.replaceAll(spelling, mark);
  }
  if (clean.length > MAX_ERROR_TEXT) clean = `${clean.slice(0, MAX_ERROR_TEXT)}…`;
  return clean.replaceAll("\u0000", "\uFFFD").toWellFormed();
}

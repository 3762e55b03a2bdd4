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
 * replaced), made storable (no NUL, no lone surrogate). Text that was `cut` before it came
 * here (a console line cut in the sandbox) also loses an end that begins a spelling: the
 * cut may have fallen inside a secret.
 */
export function redactSecrets(text: string, secrets?: Readonly<Record<string, string>>, cut = false): string {
  let clean = text;
  if (secrets) {
    const replacements = Object.entries(secrets)
      .flatMap(([key, value]) => spellings(value).map((spelling) => [spelling, key] as const))
      .sort(([a], [b]) => b.length - a.length);
    for (const [spelling, key] of replacements) clean = clean.replaceAll(spelling, `[secret:${key}]`);
    if (cut) {
      let tail = 0;
      for (const [spelling] of replacements) tail = Math.max(tail, sharedEnd(clean, spelling));
      clean = clean.slice(0, clean.length - tail);
    }
  }
  return clean.replaceAll("\u0000", "\uFFFD").toWellFormed();
}

/** The length of the longest end of `text` that begins `spelling` (shorter than it: a whole one is replaced). */
function sharedEnd(text: string, spelling: string): number {
  for (let length = Math.min(text.length, spelling.length - 1); length > 0; length--) {
    if (text.endsWith(spelling.slice(0, length))) return length;
  }
  return 0;
}

/** `text` redacted as `redactSecrets` does, and cut to MAX_ERROR_TEXT. */
export function recordableErrorText(text: string, secrets?: Readonly<Record<string, string>>): string {
  const clean = redactSecrets(text, secrets);
  return clean.length > MAX_ERROR_TEXT ? `${clean.slice(0, MAX_ERROR_TEXT)}…`.toWellFormed() : clean;
}

/**
 * Subjects of stream messages and the NATS-style filters that select them. A subject is
 * tokens joined by `.` (`orders.eu.created`); in a filter, `*` stands for exactly one token
 * and `>`, as the last token, for one or more. Wildcards are whole tokens: `ord*` is refused.
 */

export const MAX_SUBJECT_LENGTH = 255;

/** A token: printable ASCII but space, `.`, `*` and `>`. */
const TOKEN = /^[\x21-\x29\x2b-\x2d\x2f-\x3d\x3f-\x7e]+$/;

export const SUBJECT_RULE =
  "tokens joined by `.`, each of printable ASCII characters other than space, `.`, `*` and `>`, at most 255 characters in all";

/** Why a subject cannot be published to, or undefined when it can. */
export function subjectProblem(subject: string): string | undefined {
  if (subject.length === 0 || subject.length > MAX_SUBJECT_LENGTH) {
    return `must be 1–${MAX_SUBJECT_LENGTH} characters`;
  }
  if (!subject.split(".").every((token) => TOKEN.test(token))) return `must be ${SUBJECT_RULE}`;
  return undefined;
}

/** Why a filter cannot be used, or undefined when it can. */
export function filterProblem(filter: string): string | undefined {
  if (filter.length === 0 || filter.length > MAX_SUBJECT_LENGTH) {
    return `must be 1–${MAX_SUBJECT_LENGTH} characters`;
  }
  const tokens = filter.split(".");
  const valid = tokens.every(
    (token, i) => token === "*" || (token === ">" && i === tokens.length - 1) || TOKEN.test(token),
  );
  return valid ? undefined : "must be a subject whose tokens may be `*` (one token) or, last, `>` (the rest)";
}

/** A test of subjects against a valid filter, built once per read. */
export function subjectMatcher(filter: string): (subject: string) => boolean {
  const pattern = filter.split(".");
  const rest = pattern.at(-1) === ">";
  const fixed = rest ? pattern.slice(0, -1) : pattern;
  return (subject) => {
    const tokens = subject.split(".");
    if (rest ? tokens.length <= fixed.length : tokens.length !== fixed.length) return false;
    return fixed.every((want, i) => want === "*" || want === tokens[i]);
  };
}

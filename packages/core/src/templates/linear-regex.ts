import { RE2JS } from "re2js";
import { EXPRESSION_LIMITS, ExpressionLimitError } from "./expression-guard.ts";

/**
 * Regular expressions in expressions run on RE2 (re2js): time linear in the input whatever
 * the pattern, so `(a|a?)+b` against a long run of `a`s costs what `a+b` does. Patterns that
 * need backtracking (look-around, back-references) are not RE2 syntax and are refused when
 * the expression is saved. JSONata drives a regex engine through `lastIndex` and `exec`, as
 * it does a `RegExp`; this class is that interface over RE2.
 */

const compiled = new Map<string, RE2JS>();
const COMPILED_MAX = 1000;

/** Compiles a pattern with RE2, cached by source and flags. Throws RE2's syntax error for what RE2 does not accept. */
export function compileLinear(source: string, flags: string): RE2JS {
  const key = `${flags}/${source}`;
  let regex = compiled.get(key);
  if (regex === undefined) {
    regex = RE2JS.compile(
      source,
      (flags.includes("i") ? RE2JS.CASE_INSENSITIVE : 0) | (flags.includes("m") ? RE2JS.MULTILINE : 0),
    );
    if (compiled.size >= COMPILED_MAX) compiled.clear();
    compiled.set(key, regex);
  }
  return regex;
}

type Matcher = ReturnType<RE2JS["matcher"]>;

/** What JSONata's regex literal needs of a `RegExp`: `lastIndex` and `exec`, with a match's groups and index. */
export class LinearRegExp {
  lastIndex = 0;
  private readonly regex: RE2JS;
  private input: string | undefined;
  private matcher: Matcher | undefined;

  constructor(pattern: RegExp) {
    this.regex = compileLinear(pattern.source, pattern.flags);
  }

  exec(text: string): RegExpExecArray | null {
    if (text.length > EXPRESSION_LIMITS.regexText) {
      throw new ExpressionLimitError(
        `a regular expression is matched against at most ${EXPRESSION_LIMITS.regexText.toLocaleString("en")} characters (this text has ${text.length.toLocaleString("en")})`,
      );
    }
    // One matcher per input: JSONata walks a string's matches by calling exec again from lastIndex.
    if (this.input !== text || this.matcher === undefined) {
      this.input = text;
      this.matcher = this.regex.matcher(text);
    }
    const matcher = this.matcher;
    if (this.lastIndex > text.length || !matcher.find(this.lastIndex)) {
      this.lastIndex = 0;
      return null;
    }
    const groups: (string | undefined)[] = [];
    for (let group = 0; group <= matcher.groupCount(); group++) groups.push(matcher.group(group) ?? undefined);
    const match = Object.assign(groups, { index: matcher.start(), input: text }) as unknown as RegExpExecArray;
    this.lastIndex = matcher.end();
    return match;
  }
}

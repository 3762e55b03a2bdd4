import jsonata from "jsonata";
import { nextTurn, SLICE_MS } from "../loop-turns.ts";
import { jsonSizeWithin } from "./value-size.ts";

/**
 * What keeps one expression from holding a shared process. JSONata evaluates step by step
 * (every step an `await`), but awaiting does not give the event loop back, and one built-in
 * call runs to its end once started. So:
 *
 * - every evaluation gives the event loop back (`setImmediate`) after `sliceMs` of work: other
 *   accounts' requests and runs go on between its slices, whatever it computes;
 * - it may take `steps` evaluation steps in all (a count, so the same expression fails or
 *   succeeds the same way on an idle or a busy process) and nest `stack` deep;
 * - built-in functions take strings of at most `text` characters and arrays of at most
 *   `sequence` items; no string it makes, and no value it writes out (`$string`, `$join`, a
 *   transform's copy), is longer than `value` characters, no sequence longer than `sequence`
 *   items, its answer no longer than `result`, and what it builds in all stays under `built`;
 * - the built-ins whose one call could cost more than that (`$pad` to a width, `$join`,
 *   `$replace`, `$string`, `$eval`, copies) check their arguments before they start, the two
 *   whose algorithm is quadratic in JSONata (`$distinct`, `$sort`) are replaced by linear and
 *   n·log n ones, and regular expressions run on RE2 (linear-regex.ts): one evaluation step
 *   costs at most a few milliseconds on inputs within these limits.
 */
export const EXPRESSION_LIMITS = {
  /** Characters of one expression. */
  length: 4096,
  /** Evaluation steps of one evaluation (about 250 ms of one core at worst). */
  steps: 200_000,
  /** Nesting of evaluation. */
  stack: 300,
  /** Items of one sequence (`[1..n]`). */
  sequence: 100_000,
  /** Characters of a string given to a built-in function. */
  text: 100_000,
  /** Characters of a string a regular expression is matched against (RE2 takes up to half a microsecond a character). */
  regexText: 20_000,
  /** Characters of a string an evaluation makes, or of a value it writes out as JSON (`$string`, `$join`, a copy). */
  value: 262_144,
  /** Characters of the value an expression answers, written out as JSON (a step's output is bounded anyway). */
  result: 1_048_576,
  /** Characters and items one evaluation builds in all. */
  built: 8_388_608,
  /** Milliseconds of evaluation between two turns of the event loop (the slice of every tenant's work, see loop-turns.ts). */
  sliceMs: SLICE_MS,
} as const;

/** An evaluation past one of EXPRESSION_LIMITS: fails its step at once (retrying cannot help). */
export class ExpressionLimitError extends Error {
  override name = "ExpressionLimitError";
}

const GUARD = Symbol("expression guard");
/** Steps between two reads of the clock. */
const CLOCK_EVERY = 16;
const count = (n: number) => n.toLocaleString("en");

interface Guard {
  steps: number;
  built: number;
  sliceStart: number;
}

interface Environment {
  base: { [GUARD]?: Guard };
}

const guardOf = (environment: Environment): Guard => {
  const base = environment.base;
  let guard = base[GUARD];
  if (guard === undefined) {
    guard = { steps: 0, built: 0, sliceStart: performance.now() };
    base[GUARD] = guard;
  }
  return guard;
};

function onEntry(_expression: unknown, _input: unknown, environment: Environment): Promise<void> | undefined {
  const guard = guardOf(environment);
  guard.steps += 1;
  if (guard.steps % CLOCK_EVERY !== 0) return undefined;
  if (guard.steps > EXPRESSION_LIMITS.steps) {
    throw new ExpressionLimitError(
      `the expression took more than ${count(EXPRESSION_LIMITS.steps)} evaluation steps; simplify it or split it over steps`,
    );
  }
  if (performance.now() - guard.sliceStart < EXPRESSION_LIMITS.sliceMs) return undefined;
  return nextTurn().then(() => {
    guard.sliceStart = performance.now();
  });
}

/** The evaluation steps that make strings and arrays (a path only reads them, within the sequence limit). */
const BUILDERS = new Set(["function", "binary", "apply", "unary"]);

/** What a step made: refused past the value limit, and counted towards the evaluation's `built`. */
function onExit(expression: { type: string }, _input: unknown, environment: Environment, result: unknown): undefined {
  if (!BUILDERS.has(expression.type)) return undefined;
  let size: number;
  if (typeof result === "string") size = result.length;
  else if (Array.isArray(result)) size = result.length;
  else return undefined;
  if (size > EXPRESSION_LIMITS.value) throw tooLong(typeof result === "string" ? "a string" : "an array", size);
  const guard = guardOf(environment);
  guard.built += size;
  if (guard.built > EXPRESSION_LIMITS.built) {
    throw new ExpressionLimitError(
      `the expression built more than ${count(EXPRESSION_LIMITS.built)} characters and items in all`,
    );
  }
  return undefined;
}

const tooLong = (what: string, size: number) =>
  new ExpressionLimitError(
    `the expression made ${what} of ${count(size)} characters or items; the limit is ${count(EXPRESSION_LIMITS.value)}`,
  );

/** Throws unless the value written out as JSON is within `limit` characters (and does not hold itself). */
export function checkValueSize(value: unknown, what: string, limit: number = EXPRESSION_LIMITS.value): void {
  if (jsonSizeWithin(value, limit) === undefined) {
    throw new ExpressionLimitError(
      `${what} is longer than ${count(limit)} characters written out as JSON, or holds itself`,
    );
  }
}

/** What every built-in is given: strings and arrays within their limits. */
function checkArguments(name: string, args: unknown[]): void {
  for (const arg of args) {
    if (typeof arg === "string" && arg.length > EXPRESSION_LIMITS.text) {
      throw new ExpressionLimitError(
        `$${name} takes text of at most ${count(EXPRESSION_LIMITS.text)} characters (this one has ${count(arg.length)})`,
      );
    }
    if (Array.isArray(arg) && arg.length > EXPRESSION_LIMITS.sequence) {
      throw new ExpressionLimitError(
        `$${name} takes arrays of at most ${count(EXPRESSION_LIMITS.sequence)} items (this one has ${count(arg.length)})`,
      );
    }
  }
}

/** The number of times `pattern` occurs in `text` (a JSONata regex matcher or a string), counted up to `most`. */
function occurrences(text: string, pattern: unknown, most: number): number {
  let found = 0;
  if (typeof pattern === "string") {
    for (let at = text.indexOf(pattern); at !== -1 && found < most; at = text.indexOf(pattern, at + pattern.length)) {
      found += 1;
    }
    return found;
  }
  type Match = { next(): Match | undefined } | undefined;
  for (let match = (pattern as (text: string) => Match)(text); match !== undefined && found < most; found++) {
    match = match.next();
  }
  return found;
}

type Native = (this: unknown, ...args: unknown[]) => unknown;

/** Argument checks run before a built-in starts, by its name. */
const BEFORE: Record<string, (args: unknown[]) => void> = {
  pad([, width]) {
    if (typeof width === "number" && Math.abs(width) > EXPRESSION_LIMITS.value)
      throw tooLong("a string", Math.abs(width));
  },
  join([strings, separator = ""]) {
    if (!Array.isArray(strings)) return;
    let size = String(separator).length * Math.max(0, strings.length - 1);
    for (const item of strings) size += typeof item === "string" ? item.length : 0;
    if (size > EXPRESSION_LIMITS.value) throw tooLong("a string", size);
  },
  replace([text, pattern, replacement, limit]) {
    if (typeof text !== "string" || typeof replacement !== "string") return;
    // Each `$n` in the replacement writes at most the whole match; matches do not overlap.
    const references = replacement.split("$").length - 1;
    const most = typeof limit === "number" ? limit : text.length + 1;
    const bound = (matches: number) => text.length + matches * replacement.length + references * text.length;
    if (bound(most) <= EXPRESSION_LIMITS.value) return;
    let matches: number;
    try {
      matches = occurrences(text, pattern, most);
    } catch {
      return; // the built-in itself reports what is wrong with the pattern
    }
    if (bound(matches) > EXPRESSION_LIMITS.value) throw tooLong("a string", bound(matches));
  },
  string([value]) {
    if (typeof value !== "string") checkValueSize(value, "the value given to $string");
  },
  clone([value]) {
    checkValueSize(value, "the value a transform copies");
  },
  eval([text]) {
    if (typeof text === "string" && text.length > EXPRESSION_LIMITS.length) {
      throw new ExpressionLimitError(
        `$eval takes an expression of at most ${count(EXPRESSION_LIMITS.length)} characters (this one has ${count(text.length)})`,
      );
    }
  },
  distinct([values]) {
    if (Array.isArray(values) && values.length > 1) checkValueSize(values, "the array given to $distinct");
  },
};

type Comparator = (a: unknown, b: unknown) => unknown;

/**
 * JSONata's `$sort` merges by copying the rest of a list for every item (quadratic: 100,000
 * numbers took 76 s, without giving the loop back once). This one is JSONata's order (stable;
 * a comparator answering true puts its first argument after its second) in n·log n.
 */
async function sort(values: unknown, comparator?: Comparator): Promise<unknown> {
  if (!Array.isArray(values) || values.length <= 1) return values;
  if (comparator === undefined) {
    const numbers = values.every((value) => typeof value === "number");
    if (!numbers && !values.every((value) => typeof value === "string")) {
      throw { code: "D3070", index: 1, stack: new Error().stack };
    }
    return numbers ? Array.from(Float64Array.from(values as number[]).sort()) : [...(values as string[])].sort();
  }
  let from = [...values];
  let to: unknown[] = new Array(from.length);
  for (let width = 1; width < from.length; width *= 2) {
    for (let start = 0; start < from.length; start += 2 * width) {
      const middle = Math.min(start + width, from.length);
      const end = Math.min(start + 2 * width, from.length);
      let left = start;
      let right = middle;
      for (let at = start; at < end; at++) {
        const takeRight = left >= middle || (right < end && (await comparator(from[left], from[right])));
        to[at] = takeRight ? from[right++] : from[left++];
      }
    }
    [from, to] = [to, from];
  }
  return from;
}

/** Built-ins whose JSONata implementation is replaced, not just checked. */
const REPLACED: Record<string, Native> = { distinct, sort: sort as Native };

/** Every built-in function of JSONata, by name: each is checked by `checkArguments` before it runs. */
const BUILT_INS = [
  "sum",
  "count",
  "max",
  "min",
  "average",
  "string",
  "substring",
  "substringBefore",
  "substringAfter",
  "lowercase",
  "uppercase",
  "length",
  "trim",
  "pad",
  "match",
  "contains",
  "replace",
  "split",
  "join",
  "formatNumber",
  "formatBase",
  "formatInteger",
  "parseInteger",
  "number",
  "floor",
  "ceil",
  "round",
  "abs",
  "sqrt",
  "power",
  "random",
  "boolean",
  "not",
  "map",
  "zip",
  "filter",
  "single",
  "reduce",
  "sift",
  "keys",
  "lookup",
  "append",
  "exists",
  "spread",
  "merge",
  "reverse",
  "each",
  "error",
  "assert",
  "type",
  "sort",
  "shuffle",
  "distinct",
  "base64encode",
  "base64decode",
  "encodeUrlComponent",
  "encodeUrl",
  "decodeUrlComponent",
  "decodeUrl",
  "eval",
  "toMillis",
  "fromMillis",
  "clone",
];

/** JSONata's `$distinct` compares every item with every kept one; this keeps a key per item instead. */
function distinct(values: unknown): unknown {
  if (!Array.isArray(values) || values.length <= 1) return values;
  const seen = new Set<string>();
  const kept: unknown[] = [];
  if ((values as { sequence?: boolean }).sequence) Object.assign(kept, { sequence: true });
  for (const value of values) {
    const key = `${typeof value}:${canonical(value)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    kept.push(value);
  }
  return kept;
}

/** JSON with object keys in order: equal for the values JSONata's deep equality finds equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "undefined";
}

interface NativeFunction {
  _jsonata_function: true;
  implementation: Native;
  signature: unknown;
}

/** JSONata's own built-ins, read once from an evaluation (they are not exported otherwise). */
const natives = jsonata(`{${BUILT_INS.map((name) => `"${name}": $${name}`)}}`)
  .evaluate({})
  .then((found: Record<string, NativeFunction>) => found);

/** The guarded built-ins, bound over JSONata's own in every evaluation. */
const guardedFunctions: Promise<Record<string, NativeFunction>> = natives.then((found) =>
  Object.fromEntries(
    Object.entries(found).map(([name, native]) => {
      const before = BEFORE[name];
      const run = REPLACED[name] ?? native.implementation;
      const implementation: Native = function (this: unknown, ...args: unknown[]) {
        checkArguments(name, args);
        before?.(args);
        return run.apply(this, args);
      };
      return [name, { ...native, implementation }];
    }),
  ),
);

/**
 * Guards a compiled expression: its environment gets the guard's callbacks (JSONata looks them
 * up by these symbols) and the guarded built-ins over JSONata's own. Once per compiled expression.
 */
export async function guard(program: jsonata.Expression): Promise<void> {
  for (const [name, guarded] of Object.entries(await guardedFunctions)) program.assign(name, guarded);
  const assign = program.assign as (name: string | symbol, value: unknown) => void;
  assign(Symbol.for("jsonata.__evaluate_entry"), onEntry);
  assign(Symbol.for("jsonata.__evaluate_exit"), onExit);
}

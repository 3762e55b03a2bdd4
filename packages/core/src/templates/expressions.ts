import jsonata from "jsonata";
import { checkValueSize, EXPRESSION_LIMITS, guard } from "./expression-guard.ts";
import { compileLinear, LinearRegExp } from "./linear-regex.ts";

/**
 * JSONata expressions between `{{ }}` (the language AWS Step Functions adopted for the same
 * job): comparisons, arithmetic, string functions, conditionals, filters and maps over arrays.
 * Parsed when a flow is saved (a syntax error is a 400 naming the field), compiled once per
 * flow revision, and evaluated under a guard (expression-guard.ts) so that a tenant's
 * expression cannot hold a shared process: it gives the event loop back every few
 * milliseconds, and fails past EXPRESSION_LIMITS.
 */

export { EXPRESSION_LIMITS, ExpressionLimitError } from "./expression-guard.ts";

/** A plain path an expression reads from the scope: `steps.fetch.body`, `secrets.token`. */
export interface ExpressionRead {
  root: string;
  path: string[];
}

export class ExpressionSyntaxError extends Error {
  override name = "ExpressionSyntaxError";
}

/** An expression that failed while it ran: an error in its data, or past its budget. */
export class ExpressionEvaluationError extends Error {
  override name = "ExpressionEvaluationError";
}

interface JsonataError {
  code?: string;
  message?: string;
  position?: number;
}

const describe = (error: unknown) => {
  const { code, message, position } = (error ?? {}) as JsonataError;
  const at = typeof position === "number" ? ` at character ${position}` : "";
  return `${code ? `${code}: ` : ""}${message ?? String(error)}${at}`;
};

type Node = Record<string, unknown>;

/**
 * The paths of the syntax tree that start at a name (`trigger.body.id`, `steps.fetch`):
 * what the flow checks of references (a `steps.<name>` must be an earlier step, a secret must
 * be readable) holds for expressions too. Names inside filters are relative to the item and
 * are read the same way; only those starting at a scope root matter to the caller.
 */
function pathsOf(ast: unknown): ExpressionRead[] {
  const reads: ExpressionRead[] = [];
  const seen = new Set<unknown>();
  const visit = (value: unknown) => {
    if (value === null || typeof value !== "object" || seen.has(value)) return;
    seen.add(value);
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    const node = value as Node;
    if (node.type === "path" && Array.isArray(node.steps)) {
      const names: string[] = [];
      for (const step of node.steps as Node[]) {
        if (step.type !== "name" || typeof step.value !== "string") break;
        names.push(step.value);
        if (step.stages || step.predicate) break;
      }
      const [root, ...path] = names;
      if (root !== undefined) reads.push({ root, path });
    }
    for (const child of Object.values(node)) visit(child);
  };
  visit(ast);
  return reads;
}

/** The regular expressions written in the syntax tree (JSONata builds none from strings). */
function regexesOf(ast: unknown): RegExp[] {
  const found: RegExp[] = [];
  const seen = new Set<unknown>();
  const visit = (value: unknown) => {
    if (value instanceof RegExp) found.push(value);
    if (value === null || typeof value !== "object" || seen.has(value)) return;
    seen.add(value);
    for (const child of Array.isArray(value) ? value : Object.values(value)) visit(child);
  };
  visit(ast);
  return found;
}

/** Checks an expression's length, syntax and regular expressions; the plain paths it reads. Throws ExpressionSyntaxError. */
export function parseExpression(text: string): ExpressionRead[] {
  if (text.length > EXPRESSION_LIMITS.length) {
    throw new ExpressionSyntaxError(
      `an expression holds at most ${EXPRESSION_LIMITS.length.toLocaleString("en")} characters (this one ${text.length.toLocaleString("en")})`,
    );
  }
  let ast: unknown;
  try {
    ast = jsonata(text).ast();
  } catch (error) {
    throw new ExpressionSyntaxError(describe(error));
  }
  for (const regex of regexesOf(ast)) {
    try {
      compileLinear(regex.source, regex.flags);
    } catch (error) {
      throw new ExpressionSyntaxError(
        `the regular expression /${regex.source}/ is not RE2 syntax (${(error as Error).message}); regular expressions run in linear time, without look-around or back-references`,
      );
    }
  }
  return pathsOf(ast);
}

export interface CompiledExpression {
  /** Its value for the scope, a JSONata sequence as a plain array; undefined when nothing matched. */
  evaluate(scope: object): Promise<unknown>;
}

const plain = (value: unknown): unknown =>
  Array.isArray(value) && (value as { sequence?: boolean }).sequence ? Array.from(value) : value;

/** Compiles an expression checked by `parseExpression`; every evaluation keeps to EXPRESSION_LIMITS. */
export function compileExpression(text: string): CompiledExpression {
  const program = jsonata(text, {
    stack: EXPRESSION_LIMITS.stack,
    sequence: EXPRESSION_LIMITS.sequence,
    RegexEngine: LinearRegExp as unknown as RegExpConstructor,
  });
  const guarded = guard(program);
  return {
    async evaluate(scope) {
      try {
        await guarded;
        const value = plain(await program.evaluate(scope));
        checkValueSize(value, "the expression's value", EXPRESSION_LIMITS.result);
        return value;
      } catch (error) {
        throw new ExpressionEvaluationError(describe(error));
      }
    },
  };
}

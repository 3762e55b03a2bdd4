import jsonata from "jsonata";

/**
 * JSONata expressions between `{{ }}` (the language AWS Step Functions adopted for the same
 * job): comparisons, arithmetic, string functions, conditionals, filters and maps over arrays.
 * Parsed when a flow is saved (a syntax error is a 400 naming the field), compiled once per
 * flow revision, and evaluated within a fixed budget so that a tenant's expression cannot
 * hold a worker: `EXPRESSION_BUDGET`.
 */

/**
 * What one evaluation may take: milliseconds of evaluation, nested evaluation depth, and the
 * length of any sequence it builds (`[1..10000000]` is refused before it is allocated).
 */
export const EXPRESSION_BUDGET = { timeout: 250, stack: 300, sequence: 100_000 } as const;

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

/**
 * A quantified group holding a quantifier (`(a+)+`, `(x*y)*`, `(a|b+){2,}`): the shape of
 * the patterns whose backtracking grows exponentially with the input. A regular expression
 * runs to its end once started (the budget is checked between evaluation steps only), so
 * these are refused when the expression is saved.
 */
const NESTED_QUANTIFIER = /\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)(?:[+*]|\{\d+,)/;

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

/** Checks an expression's syntax and its regular expressions; the plain paths it reads. Throws ExpressionSyntaxError. */
export function parseExpression(text: string): ExpressionRead[] {
  let ast: unknown;
  try {
    ast = jsonata(text).ast();
  } catch (error) {
    throw new ExpressionSyntaxError(describe(error));
  }
  const risky = regexesOf(ast).find((regex) => NESTED_QUANTIFIER.test(regex.source));
  if (risky) {
    throw new ExpressionSyntaxError(
      `the regular expression /${risky.source}/ repeats a group that itself repeats, which can take exponential time; write it without the nesting`,
    );
  }
  return pathsOf(ast);
}

export interface CompiledExpression {
  /** Its value for the scope, a JSONata sequence as a plain array; undefined when nothing matched. */
  evaluate(scope: object): Promise<unknown>;
}

const plain = (value: unknown): unknown =>
  Array.isArray(value) && (value as { sequence?: boolean }).sequence ? Array.from(value) : value;

/** Compiles an expression checked by `parseExpression`; every evaluation keeps to EXPRESSION_BUDGET. */
export function compileExpression(text: string): CompiledExpression {
  const program = jsonata(text, { ...EXPRESSION_BUDGET });
  return {
    async evaluate(scope) {
      try {
        return plain(await program.evaluate(scope));
      } catch (error) {
        throw new ExpressionEvaluationError(describe(error));
      }
    },
  };
}

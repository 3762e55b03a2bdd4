import Ajv, { type Options } from "ajv";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { compileLinear } from "./templates/linear-regex.ts";

/**
 * Ajv for JSON Schemas the platform does not write: a tool's schemas, declared by an account
 * or answered by an MCP server an account names. Their `pattern`s run on RE2, in time linear
 * in the text, so no schema can hold a process with a pattern that backtracks; a pattern RE2
 * cannot read fails the compile. Keywords Ajv does not know are annotations, and nothing is
 * logged (the schema is someone else's).
 */

export type Dialect = "2020-12" | "draft-07";

/** Ajv's `pattern` and `patternProperties` on RE2: `test` finds a match anywhere, as `RegExp.test` does. */
const linearRegExp = Object.assign(
  (pattern: string) => {
    const regex = compileLinear(pattern, "");
    // Ajv keys the compiled patterns of a schema by this text.
    return { test: (text: string) => regex.matcher(text).find(), toString: () => `/${pattern}/` };
  },
  { code: "linearRegExp" },
);

/** An Ajv of `dialect`, with the formats, its patterns on RE2; `options` adds to the defaults above. */
export function linearAjv(dialect: Dialect, options: Options = {}): Ajv {
  const settings: Options = {
    strict: false,
    allErrors: true,
    logger: false,
    ...options,
    code: { regExp: linearRegExp },
  };
  const ajv = dialect === "2020-12" ? new Ajv2020(settings) : new Ajv(settings);
  addFormats(ajv);
  return ajv;
}

/** A JSON Pointer (`/order/qty`) as the dotted field path errors name (`order.qty`). */
export function pointerPath(pointer: string): string {
  return pointer
    .split("/")
    .slice(1)
    .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"))
    .join(".");
}

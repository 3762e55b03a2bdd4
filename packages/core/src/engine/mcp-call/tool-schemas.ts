/**
 * A tool's input schema as a check of its arguments (ajv): draft 2020-12 when the schema says
 * so, draft-07 otherwise (what MCP servers write). A schema ajv cannot compile checks nothing:
 * the server's own validation still applies when it is called.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

export interface ArgumentProblem {
  /** The argument's path below `arguments`, dot-separated ("" for the arguments as a whole). */
  field: string;
  message: string;
}

export type ArgumentsCheck = (args: Record<string, unknown>) => ArgumentProblem[];

const options = { strict: false, allErrors: true, validateSchema: false } as const;
const draft07 = addFormats(new Ajv(options));
const draft2020 = addFormats(new Ajv2020(options));

/** `/order/qty` → `order.qty`. */
const fieldOf = (pointer: string) =>
  pointer
    .split("/")
    .slice(1)
    .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"))
    .join(".");

/** One ajv error as a problem of a named field (a missing property is the problem of that property). */
function problemOf(error: ErrorObject): ArgumentProblem {
  const at = fieldOf(error.instancePath);
  if (error.keyword === "required") {
    const missing = String((error.params as { missingProperty?: string }).missingProperty ?? "");
    return { field: at ? `${at}.${missing}` : missing, message: "is required by the tool" };
  }
  if (error.keyword === "additionalProperties") {
    const extra = String((error.params as { additionalProperty?: string }).additionalProperty ?? "");
    return { field: at ? `${at}.${extra}` : extra, message: "is not an argument of the tool" };
  }
  return { field: at, message: error.message ?? "does not match the tool's input schema" };
}

/** Compiles a tool's input schema; one ajv refuses checks nothing. */
export function compileArgumentsCheck(schema: unknown): ArgumentsCheck {
  if (schema === null || typeof schema !== "object") return () => [];
  const declared = (schema as { $schema?: unknown }).$schema;
  const ajv = typeof declared === "string" && declared.includes("2020-12") ? draft2020 : draft07;
  let validate: ValidateFunction;
  try {
    // A schema's $id would be registered in the shared instance: checked without it.
    const { $id: _, ...anonymous } = schema as Record<string, unknown>;
    validate = ajv.compile(anonymous);
    // The instance is shared: it keeps no schema past its compilation (the function stays usable).
    ajv.removeSchema(anonymous);
  } catch {
    return () => [];
  }
  return (args) => (validate(args) ? [] : (validate.errors ?? []).map(problemOf));
}

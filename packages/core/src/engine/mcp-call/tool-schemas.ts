/**
 * A tool's input schema as a check of its arguments (ajv): draft 2020-12 when the schema says
 * so, draft-07 otherwise (what MCP servers write). The schema is the server's, and the server
 * is whoever the account names: its patterns run on RE2 (json-schema-ajv.ts). A schema ajv
 * cannot compile checks nothing: the server's own validation still applies when it is called.
 */
import type { ErrorObject, ValidateFunction } from "ajv";
import { linearAjv, pointerPath } from "../../json-schema-ajv.ts";

export interface ArgumentProblem {
  /** The argument's path below `arguments`, dot-separated ("" for the arguments as a whole). */
  field: string;
  message: string;
}

export type ArgumentsCheck = (args: Record<string, unknown>) => ArgumentProblem[];

const draft07 = linearAjv("draft-07", { validateSchema: false });
const draft2020 = linearAjv("2020-12", { validateSchema: false });

/** One ajv error as a problem of a named field (a missing property is the problem of that property). */
function problemOf(error: ErrorObject): ArgumentProblem {
  const at = pointerPath(error.instancePath);
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

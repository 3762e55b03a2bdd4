import type { Ajv, ErrorObject, ValidateFunction } from "ajv";
import type { Problem } from "../errors.ts";
import { type Dialect, linearAjv, pointerPath } from "../json-schema-ajv.ts";

/**
 * JSON Schema as MCP tools declare it (`input_schema`, `output_schema` of a flow's `mcp`):
 * checked when a flow is saved, and applied to a call's arguments and a run's output. The
 * dialect is 2020-12 (MCP's default), or draft-07 when the schema's `$schema` names it.
 *
 * Schemas are an account's own text, so compiling one must touch nothing another account's
 * compile can see: each is compiled by an Ajv instance of its own (Ajv keeps the `$id`s it
 * meets, and two accounts may use the same), and its `pattern`s run on RE2 (json-schema-ajv.ts;
 * a pattern RE2 cannot read is refused at save).
 */

const DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema";
const DRAFT_07 = "http://json-schema.org/draft-07/schema";

/** The dialect a schema's `$schema` names (none: 2020-12), or null for any other. */
function dialectOf(schema: Record<string, unknown>): Dialect | null {
  const named = schema.$schema;
  if (named === undefined) return "2020-12";
  if (typeof named !== "string") return null;
  const bare = named.replace(/#$/, "");
  if (bare === DRAFT_2020) return "2020-12";
  if (bare === DRAFT_07 || bare === DRAFT_07.replace("http:", "https:")) return "draft-07";
  return null;
}

const newAjv = (dialect: Dialect): Ajv => linearAjv(dialect, { addUsedSchema: false });

/**
 * One instance per dialect for checking schemas against the dialect's meta-schema: it
 * validates them as data and keeps none of them.
 */
const metaCheckers: Record<Dialect, Ajv> = { "2020-12": newAjv("2020-12"), "draft-07": newAjv("draft-07") };

/** `/properties/amount/type` as a dotted path (`properties.amount.type`), after `within`. */
function dottedPath(within: string, pointer: string): string {
  return [within, pointerPath(pointer)].filter((part) => part !== "").join(".");
}

/** Ajv's errors as problems, each at the field it names (a missing property at the property). */
export function problemsOfAjv(errors: readonly ErrorObject[] | null | undefined, within: string): Problem[] {
  return (errors ?? []).map((error) => {
    const missing = error.keyword === "required" ? (error.params as { missingProperty?: string }).missingProperty : "";
    const path = dottedPath(within, `${error.instancePath}${missing ? `/${missing}` : ""}`);
    if (error.keyword === "additionalProperties") {
      const extra = (error.params as { additionalProperty?: string }).additionalProperty;
      return { path: dottedPath(path, `/${extra}`), message: "is not a property the schema allows" };
    }
    return { path, message: missing ? "is required" : (error.message ?? "is invalid") };
  });
}

export type CompiledSchema = { ok: true; validate: ValidateFunction } | { ok: false; problems: Problem[] };

/**
 * Checks `schema` as an MCP tool schema (field `within`, `mcp.input_schema`) and compiles it:
 * an object schema (`type: "object"`, as MCP requires of both), valid against its dialect's
 * meta-schema, whose references all resolve within it and whose patterns RE2 reads.
 */
export function compileToolSchema(schema: Record<string, unknown>, within: string): CompiledSchema {
  const refuse = (message: string, path = within): CompiledSchema => ({ ok: false, problems: [{ path, message }] });
  const dialect = dialectOf(schema);
  if (dialect === null) return refuse(`must be JSON Schema 2020-12 (the default) or draft-07`, `${within}.$schema`);
  if (schema.type !== "object")
    return refuse('must be "object": a tool takes and gives a JSON object', `${within}.type`);
  const checker = metaCheckers[dialect];
  if (!checker.validateSchema(schema)) return { ok: false, problems: problemsOfAjv(checker.errors, within) };
  try {
    return { ok: true, validate: newAjv(dialect).compile(schema) };
  } catch (error) {
    // An unresolved `$ref`, a pattern RE2 cannot read, a format no one defines.
    return refuse(`is not a usable JSON Schema: ${error instanceof Error ? error.message : String(error)}`);
  }
}

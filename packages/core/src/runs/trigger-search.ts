import { type Expression, type SqlBool, sql } from "kysely";

/**
 * Run search by trigger data (`?where=body.data.object.customer&equals=cus_123`): the path
 * and value become a containment document (`{"body":{"data":{"object":{"customer":"cus_123"}}}}`)
 * that `trigger @>` tests, which the GIN index `runs_trigger_search` (jsonb_path_ops: one
 * hash per path-and-value) answers without reading the flow's other runs. Text that spells
 * a number, `true`, `false` or `null` matches that JSON value as well as the string.
 */
export function triggerHolds(path: string, equals: string): Expression<SqlBool> {
  const documents = valuesOf(equals).map((value) =>
    JSON.stringify(path.split(".").reduceRight<unknown>((inner, key) => ({ [key]: inner }), value)),
  );
  return sql<SqlBool>`(${sql.join(
    documents.map((document) => sql`runs.trigger @> ${document}::jsonb`),
    sql` or `,
  )})`;
}

/** The JSON values the text of `equals` may stand for. */
function valuesOf(equals: string): unknown[] {
  if (equals === "true" || equals === "false" || equals === "null") return [equals, JSON.parse(equals)];
  const number = Number(equals);
  return equals.trim() !== "" && Number.isFinite(number) ? [equals, number] : [equals];
}

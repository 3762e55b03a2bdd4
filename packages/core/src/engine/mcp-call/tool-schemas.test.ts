import { describe, expect, test } from "bun:test";
import { compileArgumentsCheck } from "./tool-schemas.ts";

describe("a tool's input schema as a check of its arguments", () => {
  const order = {
    type: "object",
    properties: {
      sku: { type: "string" },
      qty: { type: "integer", minimum: 1 },
      ship: { type: "object", properties: { email: { type: "string", format: "email" } }, required: ["email"] },
    },
    required: ["sku", "qty"],
    additionalProperties: false,
  };

  test("a server's pattern that would backtrack runs on RE2: the check answers at once", () => {
    // On a backtracking engine, ^(a+)+$ against 40 a's and a "!" takes longer than any test's bound.
    const check = compileArgumentsCheck({
      type: "object",
      properties: { code: { type: "string", pattern: "^(a+)+$" } },
    });
    expect(check({ code: `${"a".repeat(40)}!` })).toEqual([{ field: "code", message: 'must match pattern "^(a+)+$"' }]);
    expect(check({ code: "aaaa" })).toEqual([]);
  });

  test("arguments that fit have no problems", () => {
    expect(compileArgumentsCheck(order)({ sku: "a-1", qty: 2, ship: { email: "ada@example.com" } })).toEqual([]);
  });

  test("each problem names its argument: a wrong type, a missing one, an unknown one, a nested one, a format", () => {
    const problems = compileArgumentsCheck(order)({ qty: 0, colour: "red", ship: { email: "not an address" } });
    expect(problems).toEqual(
      expect.arrayContaining([
        { field: "sku", message: "is required by the tool" },
        { field: "colour", message: "is not an argument of the tool" },
        { field: "qty", message: "must be >= 1" },
        { field: "ship.email", message: 'must match format "email"' },
      ]),
    );
    expect(problems).toHaveLength(4);
  });

  test("a draft 2020-12 schema is read as one (prefixItems), a draft-07 one as draft-07", () => {
    const pair = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: { pair: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }], items: false } },
    };
    expect(compileArgumentsCheck(pair)({ pair: ["a", 1] })).toEqual([]);
    expect(compileArgumentsCheck(pair)({ pair: ["a", "b"] })).toEqual([{ field: "pair.1", message: "must be number" }]);
    const draft07 = { $schema: "http://json-schema.org/draft-07/schema#", type: "object", required: ["a"] };
    expect(compileArgumentsCheck(draft07)({})).toEqual([{ field: "a", message: "is required by the tool" }]);
  });

  test("a schema that does not compile checks nothing (the server still checks its own)", () => {
    expect(compileArgumentsCheck({ type: "object", properties: { a: { $ref: "#/nowhere" } } })({ a: 1 })).toEqual([]);
    expect(compileArgumentsCheck(undefined)({ a: 1 })).toEqual([]);
  });

  test("two tools whose schemas share an $id are checked each by its own", () => {
    const first = compileArgumentsCheck({ $id: "urn:args", type: "object", required: ["a"] });
    const second = compileArgumentsCheck({ $id: "urn:args", type: "object", required: ["b"] });
    expect(first({ b: 1 })).toEqual([{ field: "a", message: "is required by the tool" }]);
    expect(second({ a: 1 })).toEqual([{ field: "b", message: "is required by the tool" }]);
  });
});

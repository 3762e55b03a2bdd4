import { describe, expect, test } from "bun:test";
import { filterProblem, subjectMatcher, subjectProblem } from "./subjects.ts";

describe("subjects", () => {
  test("a subject is dot-separated tokens of printable ASCII, without wildcards", () => {
    for (const subject of ["orders", "orders.eu.created", "payment_intent.succeeded", "a-b.c:d.e@f", "x".repeat(255)]) {
      expect(subjectProblem(subject)).toBeUndefined();
    }
    for (const subject of [
      "",
      "x".repeat(256),
      "orders.",
      ".orders",
      "a..b",
      "a.*",
      "a.>",
      "a b",
      "a\tb",
      "ä",
      "a*b",
    ]) {
      expect(subjectProblem(subject)).toBeString();
    }
  });

  test("a filter may use * for a whole token anywhere and > as the last token only", () => {
    for (const filter of ["orders", "orders.*", "*.created", "*", ">", "orders.>", "*.*.>"]) {
      expect(filterProblem(filter)).toBeUndefined();
    }
    for (const filter of ["", "orders.>.x", "> .x", "ord*", "orders.cr>", "a..b", "x".repeat(256)]) {
      expect(filterProblem(filter)).toBeString();
    }
  });

  test("* matches exactly one token; > matches one or more at the end", () => {
    const cases: [string, string, boolean][] = [
      ["orders.created", "orders.created", true],
      ["orders.created", "orders.deleted", false],
      ["orders.created", "orders.created.eu", false],
      ["orders.*", "orders.created", true],
      ["orders.*", "orders", false],
      ["orders.*", "orders.created.eu", false],
      ["*.created", "orders.created", true],
      ["*.created", "orders.eu.created", false],
      ["orders.>", "orders.created", true],
      ["orders.>", "orders.eu.created", true],
      ["orders.>", "orders", false],
      [">", "anything.at.all", true],
      ["*.*.>", "a.b", false],
      ["*.*.>", "a.b.c", true],
    ];
    for (const [filter, subject, expected] of cases) {
      expect({ filter, subject, matches: subjectMatcher(filter)(subject) }).toEqual({
        filter,
        subject,
        matches: expected,
      });
    }
  });
});

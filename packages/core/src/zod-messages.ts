import { z } from "zod";

const withArticle = (noun: string) => (/^[aeiou]/.test(noun) ? `an ${noun}` : `a ${noun}`);

/**
 * The words every schema uses for a missing or mistyped field, as the rest of the API
 * says them (`name: is required`, `timeout: must be a number`) instead of zod's
 * "Invalid input: expected string, received undefined". A schema's own message wins.
 * Imported by config.ts, which every process and the package entry load before any schema parses.
 */
z.config({
  customError: (issue) => {
    if (issue.code !== "invalid_type") return undefined;
    if (issue.input === undefined) return "is required";
    return `must be ${withArticle(issue.expected === "record" ? "object" : issue.expected)}`;
  },
});

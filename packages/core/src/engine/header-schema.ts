import { z } from "zod";

/** HTTP header names are tokens; values hold no line breaks. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Headers a step sends or answers (`respond`, `mcp.call`): names that are HTTP tokens, values
 * as text without line breaks. A value from a template reference may be a number or a
 * boolean: it is sent as text. A name that is no header name is reported as such, in words.
 */
export const stepHeaders = z
  .record(
    z.string().regex(HEADER_NAME, "must be an HTTP header name"),
    z
      .union([z.string(), z.number(), z.boolean()], "must be a string")
      .transform(String)
      .refine((value) => !/[\r\n\0]/.test(value), "must not hold line breaks"),
    { error: (issue) => (issue.code === "invalid_key" ? "must be an HTTP header name" : "must be an object") },
  )
  .default({});

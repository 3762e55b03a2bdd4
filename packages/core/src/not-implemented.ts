import { DomainError } from "./errors.ts";

/**
 * The answer of a specified operation whose area has not been built yet: 501 with
 * `{error: "not implemented"}`. Each area's own issue replaces these.
 */
export function notImplemented(): never {
  throw new DomainError("not_implemented", "not implemented");
}

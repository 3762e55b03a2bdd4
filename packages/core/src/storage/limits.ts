import { DomainError } from "../errors.ts";

/** The largest message body or KV value, as JSON text in UTF-8: 1 MiB. */
export const MAX_JSON_BYTES = 1024 * 1024;

/** The JSON text of a message body or value; 413 when it is over `MAX_JSON_BYTES`. */
export function boundedJson(what: string, value: unknown): string {
  const text = JSON.stringify(value);
  if (Buffer.byteLength(text) > MAX_JSON_BYTES) {
    throw new DomainError("payload_too_large", `${what} is over ${MAX_JSON_BYTES} bytes of JSON`);
  }
  return text;
}

/** The longest retention age and TTL: ten years, in seconds. */
export const MAX_DURATION_S = 10 * 365 * 24 * 3600;

import { DomainError } from "../errors.ts";
import { readAtMost } from "../read-at-most.ts";

/**
 * Reads a delivery's body, at most `maxBytes` (WEBHOOK_MAX_BYTES) of it. A declared
 * Content-Length over the limit is refused before anything is read; a body without one
 * (chunked) is read until it passes the limit and no further. Over the limit: a
 * `payload_too_large` DomainError (413). No body reads as zero bytes.
 */
export async function readWebhookBody(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
  declaredLength?: string | null,
): Promise<Uint8Array> {
  const tooLarge = () => new DomainError("payload_too_large", `request body exceeds ${maxBytes} bytes`);
  if (declaredLength && Number(declaredLength) > maxBytes) throw tooLarge();
  if (!body) return new Uint8Array(0);
  const raw = await readAtMost(body, maxBytes);
  if (!raw) throw tooLarge();
  return raw;
}

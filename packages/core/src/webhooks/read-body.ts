import { DomainError } from "../errors.ts";
import { readAtMost } from "../read-at-most.ts";
import { bodyReadFailure, readBytes } from "../request-body.ts";

/**
 * Reads a request's body, at most `maxBytes` (WEBHOOK_MAX_BYTES) of it. A declared
 * Content-Length over the limit is refused before anything is read; within it, the body is
 * taken in one piece (Bun's server reads exactly the declared length, so this costs no
 * stream: `request.body`, which makes one, is not touched) and its size is still checked. A
 * body without one (chunked) is read until it passes the limit and no further. Over the
 * limit: a `payload_too_large` DomainError (413). No body reads as zero bytes.
 */
export async function readWebhookBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const tooLarge = () => new DomainError("payload_too_large", `request body exceeds ${maxBytes} bytes`);
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge();
  let raw: Uint8Array | null;
  if (declared !== null) raw = await readBytes(request);
  else if (!request.body) return new Uint8Array(0);
  else {
    raw = await readAtMost(request.body, maxBytes).catch((error: unknown) => {
      throw bodyReadFailure(request, error);
    });
  }
  if (!raw || raw.byteLength > maxBytes) throw tooLarge();
  return raw;
}

import { DomainError } from "./errors.ts";

/** Reading a request's body: what goes wrong there is the client's doing, and is answered so. */

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * What a failed read of a request's body was: the client closing the connection before it
 * sent the whole body (Bun rejects the read with an AbortError and aborts the request's
 * signal) is `client_closed`, counted as 499 rather than as a server error; anything else
 * is what it was.
 */
export function bodyReadFailure(request: Request, error: unknown): unknown {
  if (!request.signal.aborted) return error;
  return new DomainError("client_closed", "the client closed the connection before its request was read", {
    cause: error,
  });
}

/** The body's bytes, as `bodyReadFailure` words a failure. */
export async function readBytes(request: Request): Promise<Uint8Array> {
  try {
    return new Uint8Array(await request.arrayBuffer());
  } catch (error) {
    throw bodyReadFailure(request, error);
  }
}

/**
 * A request's body as text. Bytes that are not UTF-8 are refused (400) rather than replaced
 * with U+FFFD, as `Request.text()` would: a value must reach storage as it was sent or not at all.
 */
export async function readUtf8Text(request: Request): Promise<string> {
  const bytes = await readBytes(request);
  try {
    return utf8.decode(bytes);
  } catch {
    throw new DomainError("validation_error", "request body is not valid UTF-8");
  }
}

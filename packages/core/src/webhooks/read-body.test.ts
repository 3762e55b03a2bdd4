import { describe, expect, test } from "bun:test";
import { DomainError } from "../errors.ts";
import { readWebhookBody } from "./read-body.ts";

/** A body of `chunks` chunks of `size` bytes (endless when chunks is Infinity), counting what was pulled. */
function chunkedBody(size: number, chunks: number) {
  const seen = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (seen.pulled === chunks) return controller.close();
        seen.pulled += 1;
        controller.enqueue(new Uint8Array(size).fill(seen.pulled % 256));
      },
      cancel() {
        seen.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  ); // pulled only when read
  return { stream, seen };
}

/** A POST carrying `body`, with a Content-Length header when `declared` is given. */
function post(body: ReadableStream<Uint8Array> | null, declared?: string): Request {
  const headers = declared === undefined ? undefined : { "content-length": declared };
  return new Request("http://ingress.test/webhooks/x", {
    method: "POST",
    body,
    headers,
    duplex: "half",
  } as RequestInit);
}

async function tooLarge(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!(error instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(error)}`);
  return { code: error.code, message: error.message };
}

describe("reading a webhook body within WEBHOOK_MAX_BYTES", () => {
  test("a body up to the limit is read whole, byte for byte", async () => {
    const { stream } = chunkedBody(1000, 4);
    const raw = await readWebhookBody(post(stream), 4000);
    expect(raw.byteLength).toBe(4000);
    expect([raw[0], raw[999], raw[1000], raw[3999]]).toEqual([1, 1, 2, 4]);
  });

  test("an endless chunked body stops being read just past the limit", async () => {
    const { stream, seen } = chunkedBody(1000, Number.POSITIVE_INFINITY);
    expect(await tooLarge(readWebhookBody(post(stream), 4500))).toEqual({
      code: "payload_too_large",
      message: "request body exceeds 4500 bytes",
    });
    expect(seen.pulled).toBe(5);
    expect(seen.cancelled).toBe(true);
  });

  test("a declared length over the limit is refused before a byte is read", async () => {
    const { stream, seen } = chunkedBody(1000, 20);
    expect(await tooLarge(readWebhookBody(post(stream, "20000"), 10_000))).toEqual({
      code: "payload_too_large",
      message: "request body exceeds 10000 bytes",
    });
    expect(seen.pulled).toBe(0);
  });

  test("a declared length within the limit is not trusted: the bytes are still counted", async () => {
    const { stream } = chunkedBody(1000, 20);
    expect((await tooLarge(readWebhookBody(post(stream, "100"), 10_000))).code).toBe("payload_too_large");
  });

  test("a body within its declared length is read whole", async () => {
    const { stream } = chunkedBody(1000, 3);
    expect((await readWebhookBody(post(stream, "3000"), 4000)).byteLength).toBe(3000);
  });

  test("no body reads as zero bytes", async () => {
    expect((await readWebhookBody(post(null), 10)).byteLength).toBe(0);
  });
});

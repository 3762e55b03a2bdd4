/**
 * Reads a body of unknown length, giving up (null) as soon as it passes `limit` bytes:
 * what is past the limit is never read, and the stream is cancelled.
 */
export async function readAtMost(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<Uint8Array<ArrayBuffer> | null> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > limit) return null;
    chunks.push(chunk);
  }
  // Buffer.concat allocates a plain ArrayBuffer (never a SharedArrayBuffer); its type does not say so.
  return Buffer.concat(chunks) as Uint8Array<ArrayBuffer>;
}

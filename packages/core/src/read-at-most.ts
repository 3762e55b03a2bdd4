/**
 * Reads a body of unknown length, giving up (null) as soon as it passes `limit` bytes:
 * what is past the limit is never read, and the stream is cancelled.
 */
export async function readAtMost(body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array | null> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

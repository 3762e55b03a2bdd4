/**
 * The fetch the MCP transport uses: every request it makes (the initialize, each call, the
 * session's end, each hop of a redirect the SDK follows) goes through the address guard of
 * `http.request` (safe-http/guard.ts), connects to the address the guard checked, never
 * follows a redirect itself, and is never read past `maxResponseBytes`.
 */
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type GuardOptions, resolveTarget } from "../safe-http/guard.ts";
import { StepFailure } from "../step-failure.ts";

export interface GuardedFetchOptions {
  guard: GuardOptions;
  maxResponseBytes: number;
  /** Extra CA certificates (PEM) trusted for https, for a private PKI. */
  ca?: string[];
}

/** A guarded fetch, and the guard's refusal once it refused (the SDK may wrap the error it throws). */
export interface GuardedFetch {
  fetch: FetchLike;
  refusal(): StepFailure | undefined;
}

/** Passes a body through, failing the stream once it passes `limit` bytes. */
function bounded(body: ReadableStream<Uint8Array>, limit: number, url: URL): ReadableStream<Uint8Array> {
  let size = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        size += chunk.byteLength;
        if (size > limit) {
          controller.error(new StepFailure(`mcp.call: the answer of ${url.href} is larger than ${limit} bytes`, false));
          return;
        }
        controller.enqueue(chunk);
      },
    }),
  );
}

export function createGuardedFetch(options: GuardedFetchOptions): GuardedFetch {
  let refused: StepFailure | undefined;
  const guardedFetch: FetchLike = async (input, init) => {
    const url = new URL(input);
    let target: Awaited<ReturnType<typeof resolveTarget>>;
    try {
      target = await resolveTarget(url, options.guard, "mcp.call");
    } catch (error) {
      if (error instanceof StepFailure) refused = error;
      throw error;
    }
    const headers = new Headers(init?.headers);
    headers.set("host", target.host);
    const tls = target.serverName || options.ca ? { serverName: target.serverName, ca: options.ca } : undefined;
    const response = await fetch(target.connectUrl, { ...init, headers, redirect: "manual", tls });
    // A new response without `url`: the SDK judges a redirect against the URL it asked for, not the address.
    return new Response(response.body ? bounded(response.body, options.maxResponseBytes, url) : null, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
  return { fetch: guardedFetch, refusal: () => refused };
}

/**
 * The fetch the MCP transport uses: every request it makes (the initialize, each call, the
 * session's end, each hop of a redirect the SDK follows) goes through the address guard of
 * `http.request` (safe-http/guard.ts), connects to the address the guard checked, never
 * follows a redirect itself, and is never read past `maxResponseBytes`.
 */
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { clientRequest } from "../../tracing/spans.ts";
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

/**
 * Passes a body through, failing it once it passes `limit` bytes; `onBroken` hears of a body
 * that fails (a connection cut mid-answer, or one too large) as it fails.
 */
function watched(
  body: ReadableStream<Uint8Array>,
  limit: number,
  url: URL,
  onBroken: (error: unknown) => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let size = 0;
  const fail = (controller: ReadableStreamDefaultController<Uint8Array>, error: unknown) => {
    onBroken(error);
    controller.error(error);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let read: Awaited<ReturnType<typeof reader.read>>;
      try {
        read = await reader.read();
      } catch (error) {
        fail(controller, error);
        return;
      }
      if (read.done) {
        controller.close();
        return;
      }
      size += read.value.byteLength;
      if (size > limit) {
        reader.cancel().catch(() => undefined);
        fail(controller, new StepFailure(`mcp.call: the answer of ${url.href} is larger than ${limit} bytes`, false));
        return;
      }
      controller.enqueue(read.value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/**
 * `onBroken` hears of the body of an answer to a POST (a message's answer) that fails: the SDK
 * only reports it aside, and the request it answers would wait for its timeout.
 */
export function createGuardedFetch(
  options: GuardedFetchOptions,
  onBroken: (error: unknown) => void = () => undefined,
): GuardedFetch {
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
    const method = (init?.method ?? "GET").toUpperCase();
    const response = await clientRequest(method, url, headers, () =>
      fetch(target.connectUrl, { ...init, headers, redirect: "manual", tls }),
    );
    // A new response without `url`: the SDK judges a redirect against the URL it asked for, not the address.
    const post = method === "POST";
    const body = response.body
      ? watched(response.body, options.maxResponseBytes, url, post ? onBroken : () => undefined)
      : null;
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
  return { fetch: guardedFetch, refusal: () => refused };
}

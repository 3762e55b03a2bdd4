/**
 * The `http.request` built-in: one HTTP request from a flow, guarded against SSRF on every hop
 * (see guard.ts), redirects followed by hand (at most 5), a timeout covering the redirects and
 * the body, and a cap on the response size that is never read past.
 */

import type { HttpCallRecord } from "@platform/db";
import { messageOf } from "../../errors.ts";
import { readAtMost } from "../../read-at-most.ts";
import { clientRequest } from "../../tracing/spans.ts";
import { StepFailure } from "../step-failure.ts";
import { parseNetwork } from "./addresses.ts";
import { type GuardOptions, type Resolver, resolveTarget, systemResolver, type Target } from "./guard.ts";
import { DEFAULT_HTTP_TIMEOUT_MS, decodeBody, encodeBody, type HttpRequestPayload, parsePayload } from "./payload.ts";

export { parseIp, parseNetwork, specialRange } from "./addresses.ts";
export type { Resolver } from "./guard.ts";
export { DEFAULT_HTTP_TIMEOUT_MS, type HttpRequestPayload, httpRequestPayloadSchema } from "./payload.ts";

export const MAX_REDIRECTS = 5;

export interface HttpRequestStepOptions {
  /** `ALLOW_PRIVATE_NETWORK`: true turns the address guard off altogether. */
  allowPrivateNetwork: boolean;
  /** Largest response body read (after decompression); a larger one fails the step. */
  maxResponseBytes: number;
  /** Host name → addresses; the system resolver when absent. Tests map names to addresses here. */
  resolve?: Resolver;
  /** Networks reachable although private (`10.1.2.3`, `10.1.0.0/16`, `fd00::/8`): one internal service, say. */
  allowedNetworks?: string[];
  /** Extra CA certificates (PEM) trusted for https, for a private PKI. */
  ca?: string[];
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** What one request did, as its attempt records it (see attempt-notes.ts): `status` null when no answer came. */
export type HttpCall = HttpCallRecord;

/** Runs one request; `onCall` hears what it did once it is over, whether it succeeded or failed (not for a bad payload). */
export type HttpRequestStep = (
  payload: unknown,
  signal: AbortSignal,
  onCall?: (call: HttpCall) => void,
) => Promise<HttpResponse>;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Credentials a redirect to another origin must not carry along (as browsers do). */
const CREDENTIAL_HEADERS = ["authorization", "cookie", "proxy-authorization"];
const EXCERPT_CHARS = 200;

interface Attempt {
  method: string;
  url: URL;
  headers: Headers;
  body: string | undefined;
}

/** The request after a redirect: 303 (and 301/302 of a POST) become a GET without a body. */
function redirected(attempt: Attempt, status: number, location: string): Attempt {
  let next: URL;
  try {
    next = new URL(location, attempt.url);
  } catch {
    throw new StepFailure(`http.request: ${attempt.url.origin} redirected to an invalid URL: ${location}`, false);
  }
  if (next.protocol !== "http:" && next.protocol !== "https:") {
    throw new StepFailure(`http.request: refused a redirect to ${next.protocol} (only http and https)`, false);
  }
  const headers = new Headers(attempt.headers);
  if (next.origin !== attempt.url.origin) for (const name of CREDENTIAL_HEADERS) headers.delete(name);
  const toGet =
    status === 303 ? attempt.method !== "HEAD" : (status === 301 || status === 302) && attempt.method === "POST";
  if (!toGet) return { ...attempt, url: next, headers };
  headers.delete("content-type");
  headers.delete("content-length");
  return { method: "GET", url: next, headers, body: undefined };
}

export function createHttpRequestStep(options: HttpRequestStepOptions): HttpRequestStep {
  const guard: GuardOptions = {
    allowPrivateNetwork: options.allowPrivateNetwork,
    allowedNetworks: (options.allowedNetworks ?? []).map(parseNetwork),
    resolve: options.resolve ?? systemResolver,
  };
  const limit = options.maxResponseBytes;

  async function send(attempt: Attempt, target: Target, signal: AbortSignal): Promise<Response> {
    const headers = new Headers(attempt.headers);
    headers.set("host", target.host);
    const tls = target.serverName || options.ca ? { serverName: target.serverName, ca: options.ca } : undefined;
    try {
      return await clientRequest(attempt.method, attempt.url, headers, () =>
        fetch(target.connectUrl, {
          method: attempt.method,
          headers,
          body: attempt.body,
          redirect: "manual",
          signal,
          tls,
        }),
      );
    } catch (error) {
      if (signal.aborted) throw error;
      const reason = messageOf(error);
      throw new StepFailure(`http.request: ${attempt.method} ${attempt.url.href} failed: ${reason}`);
    }
  }

  async function readBody(response: Response, url: URL): Promise<Uint8Array> {
    const tooLarge = () =>
      new StepFailure(`http.request: the response of ${url.href} is larger than ${limit} bytes`, false);
    const declared = Number(response.headers.get("content-length") ?? Number.NaN);
    if (declared > limit) {
      await response.body?.cancel();
      throw tooLarge();
    }
    if (!response.body) return new Uint8Array();
    const bytes = await readAtMost(response.body, limit);
    if (bytes === null) throw tooLarge();
    return bytes;
  }

  async function run(request: HttpRequestPayload, signal: AbortSignal, call: HttpCall): Promise<HttpResponse> {
    const headers = new Headers(request.headers);
    const body = encodeBody(request.body, headers);
    let attempt: Attempt = { method: request.method, url: new URL(request.url), headers, body };
    for (let hop = 0; ; hop++) {
      call.request_bytes = attempt.body === undefined ? 0 : Buffer.byteLength(attempt.body);
      const response = await send(attempt, await resolveTarget(attempt.url, guard), signal);
      call.status = response.status;
      const location = response.headers.get("location");
      if (REDIRECTS.has(response.status) && location !== null) {
        await response.body?.cancel();
        if (hop === MAX_REDIRECTS) {
          throw new StepFailure(`http.request: more than ${MAX_REDIRECTS} redirects from ${request.url}`, false);
        }
        attempt = redirected(attempt, response.status, location);
        continue;
      }
      const bytes = await readBody(response, attempt.url);
      call.response_bytes = bytes.byteLength;
      if (response.status >= 400) {
        const text = new TextDecoder().decode(bytes.subarray(0, EXCERPT_CHARS * 4)).slice(0, EXCERPT_CHARS);
        const retryable = response.status >= 500 || response.status === 408 || response.status === 429;
        throw new StepFailure(
          `http.request: ${attempt.method} ${attempt.url.href} answered ${response.status}${text ? `: ${text}` : ""}`,
          retryable,
        );
      }
      return {
        status: response.status,
        headers: Object.fromEntries(response.headers),
        body: decodeBody(bytes, response.headers.get("content-type")),
      };
    }
  }

  return async (payload, signal, onCall) => {
    const request = parsePayload(payload);
    const timeoutMs = request.timeout ?? DEFAULT_HTTP_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(timeoutMs);
    const started = performance.now();
    const call: HttpCall = {
      method: request.method,
      url: request.url,
      status: null,
      duration_ms: 0,
      request_bytes: 0,
      response_bytes: null,
    };
    try {
      return await run(request, AbortSignal.any([signal, timeout]), call);
    } catch (error) {
      if (error instanceof StepFailure) throw error;
      if (timeout.aborted) {
        throw new StepFailure(`http.request: ${request.method} ${request.url} timed out after ${timeoutMs} ms`);
      }
      if (signal.aborted) throw new StepFailure(`http.request: ${request.method} ${request.url} was cancelled`);
      throw new StepFailure(`http.request: ${request.method} ${request.url} failed: ${String(error)}`);
    } finally {
      onCall?.({ ...call, duration_ms: Math.round(performance.now() - started) });
    }
  };
}

/**
 * The `http.request` payload, and how bodies travel: a string as it is, anything else as JSON
 * (or as a form when the content type says so); a response as JSON when its content type is
 * JSON, else as text.
 */
import { z } from "zod";
import { StepFailure } from "../step-failure.ts";

export const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/** Timeout of one request (all its redirects and the body included) when the payload names none. */
export const DEFAULT_HTTP_TIMEOUT_MS = 30_000;

const headerValue = z.union([z.string(), z.number(), z.boolean()]).transform(String);

export const httpRequestPayloadSchema = z.object({
  method: z
    .string()
    .transform((method) => method.toUpperCase())
    .pipe(z.enum(HTTP_METHODS, { error: `must be one of ${HTTP_METHODS.join(", ")}` }))
    .default("GET"),
  url: z
    .string({ error: "is required" })
    .refine((text) => URL.canParse(text) && /^https?:$/.test(new URL(text).protocol), {
      error: "must be an absolute http:// or https:// URL",
    }),
  headers: z.record(z.string(), headerValue).default({}),
  body: z.unknown().optional(),
  timeout: z.number().int({ error: "must be a whole number of ms" }).min(1).max(3_600_000).optional(),
});

export type HttpRequestPayload = z.infer<typeof httpRequestPayloadSchema>;

export function parsePayload(payload: unknown): HttpRequestPayload {
  const result = httpRequestPayloadSchema.safeParse(payload);
  if (result.success) {
    if (result.data.body !== undefined && (result.data.method === "GET" || result.data.method === "HEAD")) {
      throw new StepFailure(`http.request: a ${result.data.method} request cannot have a body`, false);
    }
    return result.data;
  }
  const problems = result.error.issues.map((issue) => `${["payload", ...issue.path].join(".")} ${issue.message}`);
  throw new StepFailure(`http.request: ${problems.join("; ")}`, false);
}

const isJsonType = (type: string) => /^application\/([\w.+-]+\+)?json\b/i.test(type.trim());
const isFormType = (type: string) => /^application\/x-www-form-urlencoded\b/i.test(type.trim());

/** The bytes to send, setting `content-type` when the caller named none. */
export function encodeBody(body: unknown, headers: Headers): string | undefined {
  if (body === undefined) return undefined;
  const type = headers.get("content-type");
  if (typeof body === "string") {
    if (!type) headers.set("content-type", "text/plain; charset=utf-8");
    return body;
  }
  if (type && isFormType(type) && body !== null && typeof body === "object" && !Array.isArray(body)) {
    const form = new URLSearchParams();
    for (const [key, value] of Object.entries(body)) {
      form.append(key, typeof value === "string" ? value : JSON.stringify(value));
    }
    return form.toString();
  }
  if (!type) headers.set("content-type", "application/json");
  return JSON.stringify(body);
}

/** A response body: parsed JSON when the content type is JSON (text if it does not parse), else text. */
export function decodeBody(bytes: Uint8Array, contentType: string | null): unknown {
  const text = new TextDecoder().decode(bytes);
  if (!contentType || !isJsonType(contentType)) return text;
  if (text.trim() === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

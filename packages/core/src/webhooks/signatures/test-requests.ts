import type { SignedRequest } from "./common.ts";

/** The receiving time of every test delivery; signing times are set relative to it. */
export const NOW = new Date("2026-03-01T12:00:00Z");
export const NOW_S = Math.floor(NOW.getTime() / 1000);
export const WEBHOOK_URL = "https://hooks.example.com/webhooks/wh_3f9a";

/** A delivery as the ingress would hand it over, received at NOW. */
export function delivery(
  headers: Record<string, string>,
  body: string | Uint8Array,
  url: string = WEBHOOK_URL,
): SignedRequest {
  const rawBody = typeof body === "string" ? new TextEncoder().encode(body) : body;
  return { headers: new Headers(headers), rawBody, url, now: NOW };
}

/** A payload with multi-byte characters, so signing over bytes and over text must agree. */
export const PAYLOAD = JSON.stringify({
  id: "evt_1NqS2x",
  type: "payment_intent.succeeded",
  data: { object: { id: "pi_3Nq", description: "Café für Zoë 🎉", amount: 2000 } },
});

/** The same payload with one character changed. */
export const TAMPERED = PAYLOAD.replace("2000", "2001");

import { createHash } from "node:crypto";
import { mediaTypeOf } from "../media-type.ts";
import {
  decodeDigest,
  digestsEqual,
  failure,
  hmac,
  isCheck,
  readDigest,
  type SignatureCheck,
  type SignedRequest,
  VERIFIED,
  verdict,
} from "./common.ts";

const HEADER = "X-Twilio-Signature";

/**
 * Twilio: `X-Twilio-Signature: <base64>`, HMAC-SHA1 keyed with the auth token over the
 * full URL Twilio requested (query included) followed, for a form body, by every POST
 * parameter as name + value, names in code-unit order; a name sent several times
 * contributes each distinct value once, values sorted (what `twilio`'s own
 * `validateRequest` does). A JSON body is signed through the URL instead: its query holds
 * `bodySHA256`, the hex SHA-256 of the raw body, and no parameters are appended. Any
 * other body must come that way too: signed through the URL alone, its bytes would be
 * anyone's to choose. Twilio may or may not have included the scheme's default port in
 * the URL it signed, so both forms are accepted, as the SDK does. No timestamp is signed.
 */
export function verifyTwilio(authToken: string, request: SignedRequest): SignatureCheck {
  const digest = readDigest(request.headers, HEADER, {
    encoding: "base64",
    algorithm: "sha1",
    shape: "a base64 HMAC-SHA1",
  });
  if (isCheck(digest)) return digest;

  const bodyHash = searchParam(request.url, "bodySHA256");
  const form = mediaTypeOf(request.headers.get("content-type")) === "application/x-www-form-urlencoded";
  if (bodyHash === null && !form && request.rawBody.byteLength > 0) {
    return failure("mismatch", "a Twilio delivery that is not form-encoded must carry bodySHA256 in its URL");
  }
  const signedParams = bodyHash === null ? formParameters(request) : "";
  const signed = urlVariants(request.url).some((url) =>
    digestsEqual(digest, hmac("sha1", authToken, url + signedParams)),
  );
  if (!signed || bodyHash === null) return verdict(HEADER, signed);
  const bodyDigest = createHash("sha256").update(request.rawBody).digest();
  return digestsEqual(decodeDigest(bodyHash, "hex", "sha256"), bodyDigest)
    ? VERIFIED
    : failure("mismatch", "bodySHA256 does not match the body");
}

function searchParam(url: string, name: string): string | null {
  try {
    return new URL(url).searchParams.get(name);
  } catch {
    return null;
  }
}

/** The POST parameters of a form body as Twilio concatenates them (an empty body has none). */
function formParameters(request: SignedRequest): string {
  const values = new Map<string, Set<string>>();
  for (const [name, value] of new URLSearchParams(new TextDecoder().decode(request.rawBody))) {
    const seen = values.get(name) ?? new Set<string>();
    seen.add(value);
    values.set(name, seen);
  }
  return [...values.keys()]
    .sort()
    .map((name) =>
      [...(values.get(name) ?? [])]
        .sort()
        .map((value) => name + value)
        .join(""),
    )
    .join("");
}

/** The URL without a port, and with its port (or the scheme's default one). */
function urlVariants(url: string): string[] {
  const match = /^([a-z][a-z\d+.-]*:\/\/)([^/?#]*)/i.exec(url);
  if (!match) return [url];
  const [prefix, scheme = "", authority = ""] = match;
  const port = /:\d*$/.exec(authority.slice(authority.lastIndexOf("]") + 1))?.[0] ?? "";
  const host = authority.slice(0, authority.length - port.length);
  const rest = url.slice(prefix.length);
  const defaultPort = scheme.toLowerCase() === "https://" ? ":443" : ":80";
  return [scheme + host + rest, scheme + host + (port || defaultPort) + rest];
}

import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { DomainError } from "../errors.ts";
import { MAX_BODY_DEPTH, parseWebhookBody } from "./body.ts";

const options = { maxFileContentBytes: 1024 };
const bytes = (text: string) => new TextEncoder().encode(text);

async function parseError(raw: Uint8Array, contentType: string | null): Promise<{ code: string; message: string }> {
  try {
    await parseWebhookBody(raw, contentType, options);
  } catch (error) {
    if (error instanceof DomainError) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("the body was accepted");
}

/** A multipart body written byte by byte, as a sender would put it on the wire. */
function multipart(boundary: string, parts: { headers: string; content: Uint8Array }[]): Uint8Array {
  const chunks: Uint8Array[] = [];
  for (const part of parts) {
    chunks.push(bytes(`--${boundary}\r\n${part.headers}\r\n\r\n`), part.content, bytes("\r\n"));
  }
  chunks.push(bytes(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

describe("webhook bodies: JSON", () => {
  test("an object's fields go to the top level, whatever the charset parameter says", async () => {
    const raw = bytes('{"type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","amount":2000}},"ok":true}');
    expect(await parseWebhookBody(raw, "application/json; charset=utf-8", options)).toEqual({
      format: "json",
      fields: { type: "payment_intent.succeeded", data: { object: { id: "pi_1", amount: 2000 } }, ok: true },
    });
  });

  test("+json types are JSON; any other JSON value is kept under body", async () => {
    expect(await parseWebhookBody(bytes('{"specversion":"1.0"}'), "Application/CloudEvents+JSON", options)).toEqual({
      format: "json",
      fields: { specversion: "1.0" },
    });
    expect((await parseWebhookBody(bytes("[1,2]"), "application/json", options)).fields).toEqual({ body: [1, 2] });
    expect((await parseWebhookBody(bytes('"ping"'), "application/json", options)).fields).toEqual({ body: "ping" });
    expect((await parseWebhookBody(bytes("null"), "application/json", options)).fields).toEqual({ body: null });
  });

  test("a __proto__ field is an ordinary field, not a prototype", async () => {
    const { fields } = await parseWebhookBody(bytes('{"__proto__":{"admin":true}}'), "application/json", options);
    expect(Object.hasOwn(fields, "__proto__")).toBe(true);
    expect((fields as { admin?: boolean }).admin).toBeUndefined();
  });

  test("malformed JSON and invalid UTF-8 are 400s", async () => {
    const invalid = { code: "validation_error", message: "body is not valid JSON" };
    expect(await parseError(bytes('{"type": "x",'), "application/json")).toEqual(invalid);
    expect(
      await parseError(new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), "application/json"),
    ).toEqual(invalid);
  });

  test("lone surrogates in values and field names, and numbers beyond a double, are 400s naming the field", async () => {
    // What PostgreSQL's jsonb refuses would fail the shared INSERT of every account's deliveries.
    expect(await parseError(bytes('{"a":"\\ud800"}'), "application/json")).toEqual({
      code: "validation_error",
      message: "invalid input: body.a: must be valid Unicode text",
    });
    expect(await parseError(bytes('{"\\udc00":1}'), "application/json")).toEqual({
      code: "validation_error",
      message: "invalid input: body: a field name must be valid Unicode text",
    });
    expect(await parseError(bytes('"\\udbff"'), "application/json")).toEqual({
      code: "validation_error",
      message: "invalid input: body: must be valid Unicode text",
    });
    expect(await parseError(bytes('{"n":[1,-1e400]}'), "application/json")).toEqual({
      code: "validation_error",
      message: "invalid input: body.n.1: must be a number a double can hold",
    });
    // A pair written as escapes is one character, and welcome.
    const { fields } = await parseWebhookBody(bytes('{"smile":"\\ud83d\\ude00"}'), "application/json", options);
    expect(fields).toEqual({ smile: "😀" });
  });

  test("NUL characters and nesting past the limit are 400s, however deep the attempt", async () => {
    expect(await parseError(bytes('{"a":["x\\u0000y"]}'), "application/json")).toEqual({
      code: "validation_error",
      message: "invalid input: body.a.0: must not contain NUL characters",
    });
    expect(await parseError(bytes('{"b":{"a\\u0000":1}}'), "application/json")).toEqual({
      code: "validation_error",
      message: "invalid input: body.b: a field name must not contain NUL characters",
    });
    const deepest = `${"[".repeat(MAX_BODY_DEPTH)}${"]".repeat(MAX_BODY_DEPTH)}`;
    expect((await parseWebhookBody(bytes(deepest), "application/json", options)).format).toBe("json");
    const tooDeep = (depth: number) => bytes(`${"[".repeat(depth)}${"]".repeat(depth)}`);
    const refused = {
      code: "validation_error",
      message: `invalid input: body${".0".repeat(MAX_BODY_DEPTH)}: nests deeper than ${MAX_BODY_DEPTH} levels`,
    };
    expect(await parseError(tooDeep(MAX_BODY_DEPTH + 1), "application/json")).toEqual(refused);
    expect(await parseError(tooDeep(100_000), "application/json")).toEqual(refused);
  });
});

describe("webhook bodies: forms", () => {
  test("urlencoded fields are decoded; a repeated name becomes an array in order", async () => {
    const raw = bytes("MessageSid=SM123&Body=Hello+w%C3%B6rld%21&MediaUrl=a&MediaUrl=b&Empty=&MediaUrl=c");
    expect(await parseWebhookBody(raw, "application/x-www-form-urlencoded", options)).toEqual({
      format: "form",
      fields: { MessageSid: "SM123", Body: "Hello wörld!", MediaUrl: ["a", "b", "c"], Empty: "" },
    });
    const { fields } = await parseWebhookBody(bytes("__proto__=x"), "application/x-www-form-urlencoded", options);
    expect(Object.hasOwn(fields, "__proto__")).toBe(true);
    expect(await parseError(bytes("a=%00"), "application/x-www-form-urlencoded")).toEqual({
      code: "validation_error",
      message: "invalid input: body.a: must not contain NUL characters",
    });
  });

  test("multipart keeps fields and describes files by hash, with small files' bytes in base64", async () => {
    const binary = new Uint8Array(256).map((_, index) => index); // every byte value, CR and LF included
    const large = new Uint8Array(options.maxFileContentBytes + 1).fill(0x2a);
    const raw = multipart("----form7MA4YWxk", [
      { headers: 'Content-Disposition: form-data; name="event"', content: bytes("upload.done") },
      { headers: 'Content-Disposition: form-data; name="tag"', content: bytes("a") },
      { headers: 'Content-Disposition: form-data; name="tag"', content: bytes("b") },
      {
        headers:
          'Content-Disposition: form-data; name="file"; filename="bytes.bin"\r\nContent-Type: application/octet-stream',
        content: binary,
      },
      {
        headers: 'Content-Disposition: form-data; name="scan"; filename="scan.png"\r\nContent-Type: image/png',
        content: large,
      },
      { headers: 'Content-Disposition: form-data; name="note"; filename="note"', content: bytes("x") },
    ]);
    const parsed = await parseWebhookBody(raw, "multipart/form-data; boundary=----form7MA4YWxk", options);
    const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");
    expect(parsed).toEqual({
      format: "multipart",
      fields: {
        event: "upload.done",
        tag: ["a", "b"],
        file: {
          name: "bytes.bin",
          type: "application/octet-stream",
          size: 256,
          sha256: sha256(binary),
          content: Buffer.from(binary).toString("base64"),
        },
        scan: { name: "scan.png", type: "image/png", size: large.byteLength, sha256: sha256(large) },
        note: { name: "note", type: "application/octet-stream", size: 1, sha256: sha256(bytes("x")), content: "eA==" },
      },
    });
  });

  test("urlencoded names and values that are not UTF-8, as sent or percent-encoded, are 400s naming the field", async () => {
    const form = "application/x-www-form-urlencoded";
    const notUtf8 = (field: string) => ({
      code: "validation_error",
      message: `invalid input: ${field}: must be valid UTF-8`,
    });
    // `caf<0xE9>`: Latin-1. URLSearchParams would have read `caf\uFFFD`, another value.
    expect(await parseError(Buffer.concat([bytes("a=caf"), Buffer.from([0xe9])]), form)).toEqual(notUtf8("body.a"));
    expect(await parseError(bytes("ok=1&a=caf%E9"), form)).toEqual(notUtf8("body.a"));
    expect(await parseError(bytes("a=%C3"), form)).toEqual(notUtf8("body.a"));
    expect(await parseError(bytes("a=%ED%A0%80"), form)).toEqual(notUtf8("body.a")); // an encoded surrogate
    expect(await parseError(bytes("caf%E9=1"), form)).toEqual({
      code: "validation_error",
      message: "invalid input: body: a field name must be valid UTF-8",
    });
    // What URLSearchParams reads alike is read alike: `+`, stray `%`, empty sequences, no `=`, a sent U+FFFD.
    const { fields } = await parseWebhookBody(
      bytes("a=1+%2B+2&&b=100%&c&d=%zz&e=%EF%BF%BD&=v&%EF%BB%BFf=x"),
      form,
      options,
    );
    expect(fields).toEqual(
      Object.fromEntries(new URLSearchParams("a=1+%2B+2&&b=100%&c&d=%zz&e=%EF%BF%BD&=v&%EF%BB%BFf=x")),
    );
    expect(fields).toMatchObject({ a: "1 + 2", b: "100%", c: "", d: "%zz", e: "\uFFFD", "": "v", "\uFEFFf": "x" });
  });

  test("multipart names, file names and text values that are not UTF-8 are 400s; a file's bytes are its own", async () => {
    const type = "multipart/form-data; boundary=b0und";
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9]); // `caf<0xE9>`
    const disposition = (name: Uint8Array, fileName?: Uint8Array) =>
      Buffer.concat([
        bytes('Content-Disposition: form-data; name="'),
        name,
        bytes('"'),
        ...(fileName ? [bytes('; filename="'), fileName, bytes('"')] : []),
      ]);
    const body = (headers: Uint8Array, content: Uint8Array) =>
      Buffer.concat([
        bytes('--b0und\r\nContent-Disposition: form-data; name="ok"\r\n\r\n\uFFFD sent as it is\r\n'),
        bytes("--b0und\r\n"),
        headers,
        bytes("\r\n\r\n"),
        content,
        bytes("\r\n--b0und--\r\n"),
      ]);
    expect(await parseError(body(disposition(bytes("note")), latin1), type)).toEqual({
      code: "validation_error",
      message: "invalid input: body.note: must be valid UTF-8",
    });
    expect(await parseError(body(disposition(latin1), bytes("x")), type)).toEqual({
      code: "validation_error",
      message: "invalid input: body: a field name must be valid UTF-8",
    });
    expect(await parseError(body(disposition(bytes("file"), latin1), bytes("x")), type)).toEqual({
      code: "validation_error",
      message: "invalid input: body.file: a file name must be valid UTF-8",
    });
    // A file's content is bytes, whatever they are; a U+FFFD sent as UTF-8 is a character like any other.
    // UTF-8 names hold bytes 0x80–0x9F too (`€` is E2 82 AC): read byte for byte, they stay what they were.
    const file = await parseWebhookBody(
      body(disposition(bytes("€ file"), bytes("€ caf\u00e9.txt")), latin1),
      type,
      options,
    );
    expect(file.fields).toMatchObject({ ok: "\uFFFD sent as it is", "€ file": { name: "€ caf\u00e9.txt", size: 4 } });
    const text = await parseWebhookBody(body(disposition(bytes("€ note")), bytes("€ \u0080")), type, options);
    expect(text.fields).toEqual({ ok: "\uFFFD sent as it is", "€ note": "€ \u0080" });
  });

  test("a multipart body that does not parse is a 400", async () => {
    const refused = { code: "validation_error", message: "body is not valid multipart/form-data" };
    expect(await parseError(bytes("--x\r\nnot a part"), "multipart/form-data")).toEqual(refused);
    expect(await parseError(bytes("garbage"), "multipart/form-data; boundary=abc")).toEqual(refused);
  });
});

describe("webhook bodies: other types", () => {
  test("anything else is a 415 naming the type; an empty body is accepted whatever its type", async () => {
    expect(await parseError(bytes("<xml/>"), "text/xml; charset=utf-8")).toEqual({
      code: "unsupported_media_type",
      message:
        "content type text/xml is not accepted: send application/json, application/x-www-form-urlencoded or multipart/form-data",
    });
    expect((await parseError(bytes("{}"), null)).message).toStartWith("content type (none) is not accepted");
    expect(await parseWebhookBody(new Uint8Array(0), "text/plain", options)).toEqual({ format: "empty", fields: {} });
    expect(await parseWebhookBody(new Uint8Array(0), null, options)).toEqual({ format: "empty", fields: {} });
  });
});

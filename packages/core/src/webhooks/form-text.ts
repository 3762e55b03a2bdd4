import { type DomainError, invalidInput } from "../errors.ts";

/**
 * The text of form bodies, as sent or not at all. The web platform's form parsers
 * (URLSearchParams, Response.formData) replace bytes that are not UTF-8 with U+FFFD, which
 * would silently store another value; JSON bodies with such bytes are refused, and so are
 * forms: a field name or value that is not UTF-8 (as sent, or percent-encoded) is a 400
 * naming the field (`invalid input: body.note: must be valid UTF-8`).
 */

/** Keeps a leading U+FEFF as the character it is, as the URL Standard's form parser does. */
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

const AMPERSAND = 0x26;
const EQUALS = 0x3d;
const PLUS = 0x2b;
const SPACE = 0x20;
const PERCENT = 0x25;

const fieldNameProblem = () =>
  invalidInput({ path: "", message: "a field name must be valid UTF-8" }, { within: "body" });
const valueProblem = (name: string, what = "") =>
  invalidInput({ path: name, message: `${what}must be valid UTF-8` }, { within: "body" });

function decode(bytes: Uint8Array, problem: () => DomainError): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw problem();
  }
}

function hexValue(byte: number | undefined): number {
  if (byte === undefined) return -1;
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  const lower = byte | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/** The URL Standard's percent-decode of a name or value, with `+` read as a space first. */
function formDecode(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.byteLength);
  let length = 0;
  for (let index = 0; index < bytes.byteLength; index++) {
    const byte = bytes[index] as number;
    if (byte === PERCENT) {
      const high = hexValue(bytes[index + 1]);
      const low = hexValue(bytes[index + 2]);
      if (high >= 0 && low >= 0) {
        out[length++] = high * 16 + low;
        index += 2;
        continue;
      }
    }
    out[length++] = byte === PLUS ? SPACE : byte;
  }
  return out.subarray(0, length);
}

/**
 * `application/x-www-form-urlencoded`, parsed as the URL Standard does (sequences split on
 * `&`, each at its first `=`, `+` a space, `%XX` a byte), each name and value then decoded
 * as UTF-8 or refused.
 */
export function parseUrlencoded(raw: Uint8Array): [string, string][] {
  const entries: [string, string][] = [];
  let start = 0;
  while (start <= raw.byteLength) {
    let end = raw.indexOf(AMPERSAND, start);
    if (end === -1) end = raw.byteLength;
    if (end > start) {
      const sequence = raw.subarray(start, end);
      const equals = sequence.indexOf(EQUALS);
      const nameBytes = equals === -1 ? sequence : sequence.subarray(0, equals);
      const valueBytes = equals === -1 ? new Uint8Array(0) : sequence.subarray(equals + 1);
      const name = decode(formDecode(nameBytes), fieldNameProblem);
      entries.push([name, decode(formDecode(valueBytes), () => valueProblem(name))]);
    }
    start = end + 1;
  }
  return entries;
}

/** `boundary` of a multipart content type, quoted or not. */
function boundaryOf(contentType: string): string | undefined {
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

/** A parameter of a Content-Disposition header read byte for byte (latin1), quoted or not. */
function dispositionParameter(disposition: string, key: string): string | undefined {
  const match = new RegExp(`;\\s*${key}=(?:"([^"]*)"|([^;\\s]*))`, "i").exec(disposition);
  return match ? (match[1] ?? match[2]) : undefined;
}

/**
 * Refuses a `multipart/form-data` body whose field names, file names or text values are
 * not UTF-8 (a file's content is bytes, and kept as such). Parts are delimited as RFC 2046
 * says (CRLF, `--`, the boundary), as the parser that reads the fields does.
 */
export function assertMultipartText(raw: Uint8Array, contentType: string): void {
  const boundary = boundaryOf(contentType);
  if (!boundary) return;
  const delimiter = encoder.encode(`\r\n--${boundary}`);
  const headerEnd = encoder.encode("\r\n\r\n");
  // The first delimiter may open the body, without the CRLF before it.
  const body = new Uint8Array(raw.byteLength + 2);
  body.set([0x0d, 0x0a]);
  body.set(raw, 2);
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  let at = text.indexOf(delimiter);
  while (at !== -1) {
    const partStart = at + delimiter.byteLength;
    // `--` after the boundary closes the body; what follows is an epilogue.
    if (text[partStart] === 0x2d && text[partStart + 1] === 0x2d) return;
    const next = text.indexOf(delimiter, partStart);
    const part = body.subarray(partStart, next === -1 ? body.byteLength : next);
    assertPartText(part, headerEnd);
    at = next;
  }
}

function assertPartText(part: Uint8Array, headerEnd: Uint8Array): void {
  const bytes = Buffer.from(part.buffer, part.byteOffset, part.byteLength);
  const end = bytes.indexOf(headerEnd);
  // One character per byte (Node's latin1; the Encoding Standard's "latin1" is windows-1252,
  // which moves 0x80–0x9F), so that a parameter's characters are its bytes again.
  const headers = bytes.toString("latin1", 0, end === -1 ? bytes.byteLength : end);
  const disposition = /^content-disposition:(.*)$/im.exec(headers)?.[1] ?? "";
  const nameText = dispositionParameter(disposition, "name");
  if (nameText === undefined) return;
  const name = decode(Buffer.from(nameText, "latin1"), fieldNameProblem);
  const fileName = dispositionParameter(disposition, "filename");
  if (fileName !== undefined) decode(Buffer.from(fileName, "latin1"), () => valueProblem(name, "a file name "));
  // A file (`filename=`, or RFC 5987's `filename*=`) is bytes; any other part is text.
  const isFile = /;\s*filename\*?=/i.test(disposition);
  if (!isFile && end !== -1) decode(part.subarray(end + headerEnd.byteLength), () => valueProblem(name));
}

import type { Server } from "bun";

/**
 * A local OTLP/HTTP receiver for the tracing suites: it takes what the exporters post to
 * /v1/traces, in either encoding (OTLP/JSON, or protobuf read with the wire format and the
 * field numbers of opentelemetry/proto/trace/v1/trace.proto), and keeps the spans.
 */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  /** 2: error. */
  statusCode: number;
  statusMessage: string;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly encodings = new Set<string>();
  private readonly server: Server<undefined>;

  constructor() {
    this.server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (request) => {
        if (request.method !== "POST" || new URL(request.url).pathname !== "/v1/traces") {
          return new Response(null, { status: 404 });
        }
        const type = request.headers.get("content-type") ?? "";
        this.encodings.add(type);
        const body = new Uint8Array(await request.arrayBuffer());
        this.spans.push(
          ...(type.includes("json") ? fromJson(JSON.parse(new TextDecoder().decode(body))) : fromProtobuf(body)),
        );
        return type.includes("json")
          ? Response.json({})
          : new Response(new Uint8Array(), { headers: { "content-type": type } });
      },
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.server.port}`;
  }

  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  stop(): void {
    this.server.stop(true);
  }
}

type JsonValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type JsonAttribute = { key: string; value: JsonValue };

const anyValue = (value: JsonValue) =>
  value.stringValue ??
  (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue ?? ""));

const attributesOf = (list: JsonAttribute[] = []) =>
  Object.fromEntries(list.map((attribute) => [attribute.key, anyValue(attribute.value)]));

// biome-ignore lint/suspicious/noExplicitAny: OTLP/JSON as the exporter posts it; the suites assert what they read
function fromJson(request: any): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const service = String(attributesOf(resourceSpans.resource?.attributes)["service.name"] ?? "");
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        spans.push({
          service,
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? "",
          name: span.name,
          kind: span.kind,
          statusCode: span.status?.code ?? 0,
          statusMessage: span.status?.message ?? "",
          attributes: attributesOf(span.attributes),
          links: (span.links ?? []).map((link: { traceId: string; spanId: string }) => ({
            traceId: link.traceId,
            spanId: link.spanId,
          })),
        });
      }
    }
  }
  return spans;
}

/** Protobuf's wire format: each field of a message by number, as its raw value (a number, or bytes). */
function fields(bytes: Uint8Array): [number, number | Uint8Array][] {
  const out: [number, number | Uint8Array][] = [];
  let at = 0;
  const varint = () => {
    let value = 0;
    let shift = 0;
    for (;;) {
      const byte = bytes[at++] as number;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
      shift += 7;
    }
  };
  while (at < bytes.length) {
    const key = varint();
    const wire = key & 7;
    const number = Math.floor(key / 8);
    if (wire === 0) out.push([number, varint()]);
    else if (wire === 1) {
      out.push([number, bytes.subarray(at, at + 8)]);
      at += 8;
    } else if (wire === 5) {
      out.push([number, bytes.subarray(at, at + 4)]);
      at += 4;
    } else if (wire === 2) {
      const length = varint();
      out.push([number, bytes.subarray(at, at + length)]);
      at += length;
    } else throw new Error(`unexpected wire type ${wire}`);
  }
  return out;
}

const each = (bytes: Uint8Array, number: number) =>
  fields(bytes)
    .filter(([n, value]) => n === number && value instanceof Uint8Array)
    .map(([, value]) => value as Uint8Array);
const first = (bytes: Uint8Array, number: number) => each(bytes, number)[0] ?? new Uint8Array();
const numberAt = (bytes: Uint8Array, number: number) =>
  (fields(bytes).find(([n, value]) => n === number && typeof value === "number")?.[1] as number | undefined) ?? 0;
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

function protobufAttributes(message: Uint8Array, number: number): Record<string, string | number | boolean> {
  const attributes: Record<string, string | number | boolean> = {};
  for (const pair of each(message, number)) {
    const value = first(pair, 2);
    const stringValue = each(value, 1)[0];
    // AnyValue: string_value 1, bool_value 2, int_value 3.
    const boolValue = fields(value).find(([n, raw]) => n === 2 && typeof raw === "number")?.[1];
    attributes[text(first(pair, 1))] = stringValue
      ? text(stringValue)
      : boolValue !== undefined
        ? boolValue === 1
        : numberAt(value, 3);
  }
  return attributes;
}

function fromProtobuf(body: Uint8Array): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of each(body, 1)) {
    const service = String(protobufAttributes(first(resourceSpans, 1), 1)["service.name"] ?? "");
    for (const scope of each(resourceSpans, 2)) {
      for (const span of each(scope, 2)) {
        const status = first(span, 15);
        spans.push({
          service,
          traceId: hex(first(span, 1)),
          spanId: hex(first(span, 2)),
          parentSpanId: hex(first(span, 4)),
          name: text(first(span, 5)),
          kind: numberAt(span, 6),
          statusCode: numberAt(status, 3),
          statusMessage: text(first(status, 2)),
          attributes: protobufAttributes(span, 9),
          links: each(span, 13).map((link) => ({ traceId: hex(first(link, 1)), spanId: hex(first(link, 2)) })),
        });
      }
    }
  }
  return spans;
}

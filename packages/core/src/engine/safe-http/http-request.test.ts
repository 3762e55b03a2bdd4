import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { failure } from "../test-fixtures.ts";
import { createHttpRequestStep, type HttpRequestStepOptions } from "./index.ts";

/** What the local test servers saw, by server label. */
const seen: { server: string; method: string; path: string; host: string | null; headers: Headers; body: string }[] =
  [];

function startServer(label: string, hostname = "127.0.0.1") {
  return Bun.serve({
    hostname,
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const body = await request.text();
      seen.push({
        server: label,
        method: request.method,
        path: url.pathname,
        host: request.headers.get("host"),
        headers: request.headers,
        body,
      });
      const [, route, arg] = url.pathname.split("/");
      switch (route) {
        case "json":
          return Response.json({ ok: true, list: [1, 2] }, { headers: { "x-answer": "42" } });
        case "text":
          return new Response("plain words", { headers: { "content-type": "text/plain" } });
        case "echo":
          return Response.json({
            method: request.method,
            contentType: request.headers.get("content-type"),
            authorization: request.headers.get("authorization"),
            body,
          });
        case "status":
          return new Response(`status body ${arg}`, { status: Number(arg) });
        case "big":
          return new Response("x".repeat(5000));
        case "endless":
          // no content-length: the reader must stop at the cap, not at the end
          return new Response(
            new ReadableStream({
              pull(controller) {
                controller.enqueue(new Uint8Array(1024));
              },
            }),
          );
        case "slow":
          await new Promise((resolve) => {
            request.signal.addEventListener("abort", resolve);
            setTimeout(resolve, 10_000);
          });
          return new Response("late");
        case "hops": {
          const left = Number(arg);
          if (left === 0) return Response.json({ arrived: true });
          return new Response(null, { status: 302, headers: { location: `/hops/${left - 1}` } });
        }
        case "redirect":
          return new Response(null, {
            status: Number(url.searchParams.get("status") ?? 302),
            headers: { location: url.searchParams.get("to") ?? "/json" },
          });
        default:
          return new Response("not found", { status: 404 });
      }
    },
  });
}

const servers = {} as Record<"main" | "other" | "loopback2", ReturnType<typeof startServer>>;
const url = (path: string, server: keyof typeof servers = "main") =>
  `http://${servers[server].hostname}:${servers[server].port}${path}`;
const hits = (server: string) => seen.filter((entry) => entry.server === server).length;

beforeAll(() => {
  servers.main = startServer("main");
  servers.other = startServer("other");
  // a second loopback address: the target of redirects that must be refused
  servers.loopback2 = startServer("loopback2", "127.0.0.2");
});

afterAll(async () => {
  await Promise.all(Object.values(servers).map((server) => server.stop(true)));
});

const never = new AbortController().signal;

const open = (options: Partial<HttpRequestStepOptions> = {}) =>
  createHttpRequestStep({ allowPrivateNetwork: true, maxResponseBytes: 1_000_000, ...options });

describe("http.request with ALLOW_PRIVATE_NETWORK=true (local test server)", () => {
  const step = open();

  test("GET parses a JSON response and returns status and headers", async () => {
    const response = await step({ url: url("/json") }, never);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ok: true, list: [1, 2] });
    expect(response.headers["x-answer"]).toBe("42");
    expect(response.headers["content-type"]).toContain("application/json");
  });

  test("a non-JSON response comes back as text", async () => {
    expect((await step({ url: url("/text") }, never)).body).toBe("plain words");
  });

  test("an object body is sent as JSON, a string as text, a form when the content type says so", async () => {
    const json = await step({ method: "post", url: url("/echo"), body: { a: 1, b: [true] } }, never);
    expect(json.body).toEqual({
      method: "POST",
      contentType: "application/json",
      authorization: null,
      body: '{"a":1,"b":[true]}',
    });
    const text = await step({ method: "PUT", url: url("/echo"), body: "raw" }, never);
    expect(text.body).toMatchObject({ method: "PUT", contentType: "text/plain; charset=utf-8", body: "raw" });
    const form = await step(
      {
        method: "POST",
        url: url("/echo"),
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: { name: "Ada Lovelace", n: 2 },
      },
      never,
    );
    expect(form.body).toMatchObject({ body: "name=Ada+Lovelace&n=2" });
  });

  test("a response status of 400 and above fails the step; 5xx may be retried, 4xx not", async () => {
    const server = await failure(step({ url: url("/status/503") }, never));
    expect(server.message).toBe(`http.request: GET ${url("/status/503")} answered 503: status body 503`);
    expect(server.retryable).toBe(true);
    const client = await failure(step({ url: url("/status/404") }, never));
    expect(client.message).toContain("answered 404");
    expect(client.retryable).toBe(false);
  });

  test("the per-request timeout stops a server that does not answer", async () => {
    const error = await failure(step({ url: url("/slow"), timeout: 200 }, never));
    expect(error.message).toBe(`http.request: GET ${url("/slow")} timed out after 200 ms`);
    expect(error.retryable).toBe(true);
  });

  test("the engine's signal cancels the request", async () => {
    const controller = new AbortController();
    const pending = step({ url: url("/slow") }, controller.signal);
    setTimeout(() => controller.abort(), 50);
    expect((await failure(pending)).message).toBe(`http.request: GET ${url("/slow")} was cancelled`);
  });

  test("a response larger than the limit fails, declared or streamed without end", async () => {
    const small = open({ maxResponseBytes: 4096 });
    const declared = await failure(small({ url: url("/big") }, never));
    expect(declared.message).toBe(`http.request: the response of ${url("/big")} is larger than 4096 bytes`);
    expect(declared.retryable).toBe(false);
    const endless = await failure(small({ url: url("/endless") }, never));
    expect(endless.message).toBe(`http.request: the response of ${url("/endless")} is larger than 4096 bytes`);
    expect((await open({ maxResponseBytes: 5000 })({ url: url("/big") }, never)).body).toHaveLength(5000);
  });

  test("follows up to 5 redirects and refuses a sixth", async () => {
    expect((await step({ url: url("/hops/5") }, never)).body).toEqual({ arrived: true });
    const error = await failure(step({ url: url("/hops/6") }, never));
    expect(error.message).toBe(`http.request: more than 5 redirects from ${url("/hops/6")}`);
  });

  test("303 turns a POST into a GET without body; 307 keeps method and body", async () => {
    const see = await step({ method: "POST", url: url(`/redirect?status=303&to=/echo`), body: { keep: "me" } }, never);
    expect(see.body).toMatchObject({ method: "GET", body: "" });
    const temporary = await step(
      { method: "POST", url: url(`/redirect?status=307&to=/echo`), body: { keep: "me" } },
      never,
    );
    expect(temporary.body).toMatchObject({ method: "POST", body: '{"keep":"me"}' });
  });

  test("a redirect to another origin does not carry the Authorization header", async () => {
    const headers = { authorization: "Bearer secret" };
    const same = await step({ url: url("/redirect?to=/echo"), headers }, never);
    expect(same.body).toMatchObject({ authorization: "Bearer secret" });
    const to = encodeURIComponent(url("/echo", "other"));
    const other = await step({ url: url(`/redirect?to=${to}`), headers }, never);
    expect(other.body).toMatchObject({ authorization: null });
  });

  test.each([
    [{}, "http.request: payload.url is required"],
    [{ url: "ftp://example.com/x" }, "http.request: payload.url must be an absolute http:// or https:// URL"],
    [{ url: "/relative" }, "http.request: payload.url must be an absolute http:// or https:// URL"],
    [{ url: "http://example.com", method: "TRACE" }, "http.request: payload.method must be one of"],
    [{ url: "http://example.com", timeout: -5 }, "http.request: payload.timeout"],
    [{ url: "http://example.com", body: { a: 1 } }, "http.request: a GET request cannot have a body"],
    [{ url: "http://example.com", headers: { a: { b: 1 } } }, "http.request: payload.headers.a"],
  ])("refuses the payload %j", async (payload, message) => {
    const error = await failure(step(payload, never));
    expect(error.message).toStartWith(message);
    expect(error.retryable).toBe(false);
  });

  test("a connection refused fails the step, retryably", async () => {
    const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    const target = `http://127.0.0.1:${closed.port}/`;
    await closed.stop(true);
    const error = await failure(step({ url: target }, never));
    expect(error.message).toStartWith(`http.request: GET ${target} failed:`);
    expect(error.retryable).toBe(true);
  });
});

describe("http.request's SSRF guard (ALLOW_PRIVATE_NETWORK=false)", () => {
  const guarded = open({ allowPrivateNetwork: false });

  test.each([
    ["loopback", () => url("/json"), "loopback 127.0.0.0/8"],
    ["10/8", () => "http://10.0.0.1/", "private 10.0.0.0/8"],
    ["the metadata address", () => "http://169.254.169.254/latest/meta-data/", "cloud metadata 169.254.169.254/32"],
    ["IPv6 loopback", () => `http://[::1]:${servers.main.port}/json`, "loopback ::1/128"],
    ["IPv4-mapped loopback", () => `http://[::ffff:127.0.0.1]:${servers.main.port}/json`, "IPv4-mapped 127.0.0.1"],
    ["a decimal loopback", () => `http://2130706433:${servers.main.port}/json`, "loopback 127.0.0.0/8"],
  ])("refuses %s before connecting", async (_, target, reason) => {
    const before = hits("main");
    const error = await failure(guarded({ url: target() }, never));
    expect(error.message).toStartWith("http.request: refused ");
    expect(error.message).toContain(reason);
    expect(error.message).toContain("ALLOW_PRIVATE_NETWORK");
    expect(error.retryable).toBe(false);
    expect(hits("main")).toBe(before);
  });

  test("refuses a DNS name that resolves to loopback (localhost, system resolver)", async () => {
    const before = hits("main");
    const error = await failure(guarded({ url: `http://localhost:${servers.main.port}/json` }, never));
    expect(error.message).toStartWith("http.request: refused localhost, which resolves to ");
    expect(error.message).toMatch(/(127\.0\.0\.1|::1) \(loopback/);
    expect(hits("main")).toBe(before);
  });

  test("refuses a name its resolver maps to loopback", async () => {
    const step = open({ allowPrivateNetwork: false, resolve: async () => ["127.0.0.1"] });
    const error = await failure(step({ url: `http://internal.example.test:${servers.main.port}/json` }, never));
    expect(error.message).toStartWith(
      "http.request: refused internal.example.test, which resolves to 127.0.0.1 (loopback 127.0.0.0/8)",
    );
  });

  test("a name that does not resolve fails retryably", async () => {
    const step = open({
      allowPrivateNetwork: false,
      resolve: async () => {
        throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
      },
    });
    const error = await failure(step({ url: "http://nowhere.example.test/" }, never));
    expect(error.message).toBe("http.request: could not resolve nowhere.example.test (ENOTFOUND)");
    expect(error.retryable).toBe(true);
  });

  describe("with the test server's address allowed", () => {
    const names: Record<string, string[]> = {
      "api.example.test": ["127.0.0.1"],
      "rebound.example.test": ["10.0.0.7"],
      "mixed.example.test": ["10.0.0.7", "127.0.0.1"],
    };
    const step = open({
      allowPrivateNetwork: false,
      allowedNetworks: ["127.0.0.1"],
      resolve: async (hostname) => names[hostname] ?? [],
    });
    const named = (name: string, path: string) => `http://${name}:${servers.main.port}${path}`;

    test("connects to the checked address and keeps the Host header of the name", async () => {
      const response = await step({ url: named("api.example.test", "/json") }, never);
      expect(response.body).toEqual({ ok: true, list: [1, 2] });
      expect(seen.at(-1)?.host).toBe(`api.example.test:${servers.main.port}`);
    });

    test("picks the allowed address among several answers", async () => {
      expect((await step({ url: named("mixed.example.test", "/json") }, never)).status).toBe(200);
    });

    test("refuses a redirect to another loopback address, which is never contacted", async () => {
      const target = url("/json", "loopback2");
      const error = await failure(step({ url: named("api.example.test", `/redirect?to=${target}`) }, never));
      expect(error.message).toStartWith("http.request: refused 127.0.0.2 (loopback 127.0.0.0/8)");
      expect(hits("loopback2")).toBe(0);
    });

    test("refuses a redirect to the metadata address and to a name resolving to a private address", async () => {
      const metadata = encodeURIComponent("http://169.254.169.254/latest/meta-data/");
      const toMetadata = await failure(step({ url: named("api.example.test", `/redirect?to=${metadata}`) }, never));
      expect(toMetadata.message).toStartWith("http.request: refused 169.254.169.254 (cloud metadata");
      const rebound = encodeURIComponent(named("rebound.example.test", "/json"));
      const toRebound = await failure(step({ url: named("api.example.test", `/redirect?to=${rebound}`) }, never));
      expect(toRebound.message).toStartWith(
        "http.request: refused rebound.example.test, which resolves to 10.0.0.7 (private 10.0.0.0/8)",
      );
    });

    test("refuses a redirect to a scheme other than http(s)", async () => {
      const error = await failure(step({ url: named("api.example.test", "/redirect?to=file:///etc/passwd") }, never));
      expect(error.message).toBe("http.request: refused a redirect to file: (only http and https)");
    });
  });
});

describe("http.request over https to a checked address", () => {
  // a certificate for safe-http.test only, made for this run
  const dir = mkdtempSync(join(tmpdir(), "safe-http-"));
  let server: ReturnType<typeof Bun.serve>;
  let cert: string;

  beforeAll(() => {
    const made = Bun.spawnSync(
      ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        .concat(["-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "2"])
        .concat(["-subj", "/CN=safe-http.test", "-addext", "subjectAltName=DNS:safe-http.test"]),
      { stderr: "pipe" },
    );
    if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`);
    cert = readFileSync(join(dir, "cert.pem"), "utf8");
    const key = readFileSync(join(dir, "key.pem"), "utf8");
    server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { key, cert },
      fetch: (request) => Response.json({ host: request.headers.get("host") }),
    });
  });

  afterAll(async () => {
    await server.stop(true);
    rmSync(dir, { recursive: true, force: true });
  });

  const step = () =>
    open({
      allowPrivateNetwork: false,
      allowedNetworks: ["127.0.0.1"],
      resolve: async () => ["127.0.0.1"],
      ca: [cert],
    });

  test("verifies the certificate against the host name while connecting to its address", async () => {
    const response = await step()({ url: `https://safe-http.test:${server.port}/` }, never);
    expect(response.body).toEqual({ host: `safe-http.test:${server.port}` });
  });

  test("refuses a certificate that does not name the host", async () => {
    const error = await failure(step()({ url: `https://other.test:${server.port}/` }, never));
    expect(error.message).toStartWith(`http.request: GET https://other.test:${server.port}/ failed:`);
    expect(error.message).toContain("ERR_TLS_CERT_ALTNAME_INVALID");
  });
});

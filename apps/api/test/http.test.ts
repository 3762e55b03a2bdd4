import { expect, test } from "bun:test";
import { connect } from "node:net";
import type { AppRouter } from "@platform/core";

import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { signUp } from "./accounts-helpers.ts";
import { describeOnEachDatabase, startTestApi } from "./harness.ts";

/** Every operation the spec names, as `METHOD path`. */
const SPEC_OPERATIONS = [
  "POST /accounts/auth-with-password",
  "DELETE /accounts/all-passkeys",
  "DELETE /accounts/remove-user",
  "GET /accounts/payment/prices",
  "POST /monitoring/metrics/current",
  "GET /hub/mcp/registry",
  "POST /hub/nodes",
  "POST /storage/streams/{name}/messages",
  "PUT /storage/kv/{bucket}",
  "GET /gateway/{gateway_topic}",
  "DELETE /gateway/{gateway_topic}",
  "DELETE /gateway/{gateway_topic}/mapping/details",
  "GET /secrets/{key}",
  "POST /webhooks/{webhook_id}",
];

describeOnEachDatabase("HTTP edge", { maxBodyBytes: 64 * 1024 }, (suite) => {
  test("healthz answers ok with a fresh request id, and echoes one the client sent; API answers are never cached", async () => {
    const fresh = await suite.api.request("/healthz");
    expect(fresh.status).toBe(200);
    expect(await fresh.json()).toEqual({ status: "ok" });
    expect(fresh.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);

    const echoed = await suite.api.request("/healthz", { headers: { "x-request-id": "trace-42" } });
    expect((await suite.api.request("/secrets/x")).headers.get("cache-control")).toBe("no-store");
    expect(echoed.headers.get("x-request-id")).toBe("trace-42");
  });

  test("readyz is 200 while the database and broker answer", async () => {
    const response = await suite.api.request("/readyz");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ready", checks: { database: "ok", broker: "ok" } });
  });

  test("the OpenAPI document covers every specified operation with both security schemes", async () => {
    const response = await suite.api.request("/openapi.json");
    expect(response.status).toBe(200);
    // biome-ignore lint/suspicious/noExplicitAny: walking a large JSON document
    const document = (await response.json()) as any;
    expect(document.openapi).toStartWith("3.");
    const operations = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, item]) =>
        Object.keys(item)
          .filter((key) => ["get", "post", "put", "patch", "delete"].includes(key))
          .map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(operations).toEqual(expect.arrayContaining(SPEC_OPERATIONS));
    expect(document.components.securitySchemes).toEqual({
      bearerAuth: expect.objectContaining({ type: "http", scheme: "bearer" }),
      apiKey: expect.objectContaining({ type: "apiKey", in: "header", name: "X-Api-Key" }),
    });
    const secrets = document.paths["/secrets/{key}"].get;
    expect(secrets.security).toEqual([{ bearerAuth: [] }, { apiKey: [] }]);
    expect(secrets.responses["401"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/Error",
    });
    // Operations open to anonymous callers say so (`security: []`), as OpenAPI linters ask.
    const login = document.paths["/accounts/auth-with-password"].post;
    expect(login.security).toEqual([]);
    const metrics = document.paths["/monitoring/metrics/current"].post;
    expect(metrics.security).toEqual([]);
    expect(metrics.responses["400"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/MetricsValidationError",
    });
    // A 400 may carry its problems as data; no other error declares them.
    const problems = { type: "array", items: { $ref: "#/components/schemas/Problem" } };
    expect(document.components.schemas.ValidationError).toMatchObject({
      required: ["error"],
      properties: { error: { type: "string" }, problems },
    });
    expect(document.components.schemas.MetricsValidationError).toMatchObject({
      required: ["message", "data"],
      properties: { problems },
    });
    expect(document.components.schemas.Problem).toMatchObject({
      required: ["path", "message"],
      properties: { path: { type: "string" }, message: { type: "string" } },
    });
    expect(document.components.schemas.Error.properties.problems).toBeUndefined();
    const invalidRefs = new Set<string>();
    for (const item of Object.values(document.paths)) {
      for (const operation of Object.values(item as object)) {
        const schema = operation?.responses?.["400"]?.content?.["application/json"]?.schema;
        if (schema) invalidRefs.add(schema.$ref);
      }
    }
    expect([...invalidRefs].sort()).toEqual([
      "#/components/schemas/MetricsValidationError",
      "#/components/schemas/ValidationError",
    ]);
    expect(document.paths["/hub/mcp/registry"].get.operationId).toBe("listMcpRegistryServers");
  });

  test("the docs page loads its script from this server, not a CDN", async () => {
    const page = await suite.api.request("/docs");
    expect(page.headers.get("content-type")).toContain("text/html");
    const html = await page.text();
    expect(html).not.toMatch(/https?:\/\//);
    const script = html.match(/src="([^"]+\.js)"/)?.[1];
    expect(script).toBe("/docs/swagger-ui-bundle.js");
    const asset = await suite.api.request(script as string);
    expect(asset.status).toBe(200);
    expect((await asset.text()).length).toBeGreaterThan(100_000);
  });

  test("the docs page has a strict policy, runs no inline script and is never framed", async () => {
    const page = await suite.api.request("/docs");
    const csp = page.headers.get("content-security-policy") ?? "";
    // Its own files, not the rest of the origin, where tenants' answers are.
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain(`script-src ${suite.api.url}/docs/;`);
    expect(csp).toContain(`style-src ${suite.api.url}/docs/;`);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("unsafe");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await page.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    for (const src of html.matchAll(/(?:src|href)="([^"]+)"/g)) {
      const file = await suite.api.request(src[1] as string);
      expect({ src: src[1], status: file.status, nosniff: file.headers.get("x-content-type-options") }).toEqual({
        src: src[1],
        status: 200,
        nosniff: "nosniff",
      });
    }
  });

  test("an unknown route is 404 with an error body", async () => {
    const response = await suite.api.request("/no/such/thing");
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ error: "not found" });
  });

  test("invalid input is 400 in the area's shape, never a zod dump", async () => {
    const metrics = await suite.api.request("/monitoring/metrics/current", { method: "POST", json: { metrics: [] } });
    expect(metrics.status).toBe(400);
    expect(await metrics.json()).toEqual({ message: "metrics are required", data: null });
    const notAList = await suite.api.request("/monitoring/metrics/current", { method: "POST", json: { metrics: "x" } });
    expect(notAList.status).toBe(400);
    expect(await notAList.json()).toMatchObject({ data: null, problems: [{ path: "metrics" }] });

    const badJson = await suite.api.request("/monitoring/metrics/current", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toEqual({ message: "request body is not valid JSON", data: null });

    const registry = await suite.api.request("/hub/mcp/registry?limit=500", { headers: { authorization: "Bearer x" } });
    expect(registry.status).toBe(401);
  });

  test("a missing credential is 401 in the area's shape", async () => {
    const storage = await suite.api.request("/storage/kv/orders", { method: "PUT", json: { description: "x" } });
    expect(storage.status).toBe(401);
    expect(await storage.json()).toEqual({ error: "unauthorized" });

    const secrets = await suite.api.request("/secrets/db-password");
    expect(secrets.status).toBe(401);
    expect(await secrets.json()).toEqual({ error: "missing credential" });

    const trpc = await suite.api.request("/trpc/secrets.get?input=%7B%22key%22%3A%22x%22%7D");
    expect(trpc.status).toBe(401);
    const body = (await trpc.json()) as { error: { code: number; data: { code: string; domainCode: string } } };
    expect(body.error).toMatchObject({ code: -32001, data: { code: "UNAUTHORIZED", domainCode: "unauthorized" } });
    expect(JSON.stringify(body)).not.toContain("stack");
  });

  test("a typed tRPC client reaches the same procedures and sees the domain error code", async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${suite.api.url}/trpc` })] });
    const failure = await client.monitoring.current.mutate({ metrics: [] }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TRPCClientError);
    expect((failure as TRPCClientError<AppRouter>).data).toMatchObject({
      code: "BAD_REQUEST",
      domainCode: "validation_error",
      httpStatus: 400,
    });
    expect((failure as TRPCClientError<AppRouter>).message).toBe("metrics are required");
  });

  test("a body over the limit is 413, whether its length is declared or streamed", async () => {
    const big = "x".repeat(65 * 1024);
    const declared = await suite.api.request("/monitoring/metrics/current", {
      method: "POST",
      json: { metrics: [big] },
    });
    expect(declared.status).toBe(413);
    expect(await declared.json()).toEqual({ error: "request body exceeds 65536 bytes" });

    const chunks = [
      new TextEncoder().encode(`{"metrics":["`),
      new TextEncoder().encode(big),
      new TextEncoder().encode(`"]}`),
    ];
    const streamed = await suite.api.request("/monitoring/metrics/current", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new ReadableStream({
        pull(controller) {
          const next = chunks.shift();
          if (next) controller.enqueue(next);
          else controller.close();
        },
      }),
    });
    expect(streamed.status).toBe(413);
  });

  test("a webhook id that names no trigger is 404, and only POST triggers", async () => {
    const post = await suite.api.request("/webhooks/unknown-id", { method: "POST", json: { type: "x" } });
    expect(post.status).toBe(404);
    expect(await post.json()).toEqual({ error: "webhook not found" });
    const get = await suite.api.request("/webhooks/unknown-id");
    expect(get.status).toBe(405);
  });

  test("metrics count requests per route template and status", async () => {
    const secretsDenied = async () => {
      const text = await (await suite.api.request("/metrics")).text();
      const line = text
        .split("\n")
        .find((l) => l.startsWith('http_requests_total{method="GET",route="/secrets/{key}",status="401"}'));
      return Number(line?.split(" ")[1] ?? 0);
    };
    const before = await secretsDenied();
    await suite.api.request("/secrets/one");
    await suite.api.request("/secrets/two");
    expect(await secretsDenied()).toBe(before + 2);
    const text = await (await suite.api.request("/metrics")).text();
    expect(text).toMatch(
      /http_request_duration_seconds_bucket\{le="[^"]+",method="GET",route="\/healthz",status="200"\}/,
    );
    expect(text).not.toContain("/secrets/one");
  });

  test("a client that hangs up in the middle of its body is counted as 499 on every route, and logged as no error", async () => {
    const watched = await startTestApi({ backend: suite.backend, captureLogs: "info" });
    try {
      const { auth } = await signUp(watched, "hang-up");
      const headers = { authorization: `Bearer ${auth.auth_token}`, "content-type": "application/json" };
      const flow = await watched.request("/flows", {
        method: "POST",
        headers,
        json: { name: "hang-up", steps: [{ name: "s", subject: "transform", payload: {} }] },
      });
      const { data } = (await flow.json()) as { data: { id: string; webhook: { id: string } } };
      await watched.request("/gateway", { method: "POST", headers, json: { name: "g", subject: "hang-up-gw" } });
      await watched.request("/gateway/hang-up-gw/mapping", {
        method: "POST",
        headers,
        json: { method: "POST", path: "/in", flow_id: data.id },
      });
      const { port } = new URL(watched.url);
      /** Sends the request line, headers and a piece of the body, then closes the connection. */
      const hangUp = (path: string, framing: string) =>
        new Promise<void>((resolve) => {
          const socket = connect(Number(port), "127.0.0.1", () => {
            socket.write(
              `POST ${path} HTTP/1.1\r\nhost: localhost\r\nauthorization: ${headers.authorization}\r\n` +
                `content-type: application/json\r\n${framing}\r\n{"value":"`,
            );
            setTimeout(() => socket.destroy(), 100);
          });
          socket.on("close", () => resolve());
          socket.on("error", () => resolve());
        });
      const routes = [
        ["/monitoring/metrics/current", "/monitoring/metrics/current"],
        ["/trpc/secrets.put", "/trpc/secrets.put"],
        [`/webhooks/${data.webhook.id}`, "/webhooks/{webhook_id}"],
        ["/gw/hang-up-gw/in", "/gw/{gateway_topic}"],
      ] as const;
      for (const [path] of routes) {
        await hangUp(path, "content-length: 100000\r\n");
        await hangUp(path, "transfer-encoding: chunked\r\n");
      }
      await Bun.sleep(200);
      const text = await (await watched.request("/metrics")).text();
      const count = (route: string, status: number) =>
        text
          .split("\n")
          .filter((line) => line.startsWith(`http_requests_total{method="POST",route="${route}",status="${status}"}`))
          .reduce((sum, line) => sum + Number(line.split(" ")[1]), 0);
      for (const [, route] of routes) {
        expect({ route, aborted: count(route, 499), failed: count(route, 500) + count(route, 503) }).toEqual({
          route,
          aborted: 2,
          failed: 0,
        });
      }
      const errors = watched
        .logs()
        .split("\n")
        .filter((line) => line.includes('"level":50'));
      expect(errors).toEqual([]);
    } finally {
      await watched.stop();
    }
  });

  test("a request whose Host is a short name reaches the route its path names", async () => {
    // Elysia finds the path from the URL's 12th character on: `http://api/webhooks/x` read as `/x`.
    for (const host of ["x", "api", "db:1"]) {
      const answered = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(new URL(suite.api.url).port), "127.0.0.1", () => {
          socket.write(`GET /webhooks/0123 HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`);
        });
        let text = "";
        socket.on("data", (chunk) => {
          text += chunk.toString();
        });
        socket.on("end", () => resolve(text));
        socket.on("error", reject);
      });
      expect({
        host,
        status: answered.split(" ")[1],
        body: answered.slice(answered.indexOf("\r\n\r\n") + 4),
      }).toEqual({
        host,
        status: "405",
        body: '{"error":"webhooks accept POST only"}',
      });
    }
  });

  test("with the database gone, a query fails as 500 with nothing of the cause, and the broker as 503", async () => {
    const standalone = await startTestApi({ backend: suite.backend });
    try {
      const owner = await signUp(standalone, "edge-500");
      await standalone.shared.database.close();
      const users = await standalone.request("/accounts/users", {
        headers: { authorization: `Bearer ${owner.auth.auth_token}`, "x-request-id": "edge-500" },
      });
      expect(users.status).toBe(500);
      expect(await users.json()).toEqual({ error: "internal error" });
      expect(users.headers.get("x-request-id")).toBe("edge-500");

      // Sign-in first asks the limiter, which runs on the same (now closed) database here.
      const login = await standalone.request("/accounts/auth-with-password", {
        method: "POST",
        json: { email: owner.email, password: "correct horse battery staple" },
      });
      expect(login.status).toBe(503);
      expect(await login.json()).toEqual({ error: expect.stringContaining("unavailable") });
    } finally {
      await standalone.stop().catch(() => {});
    }
  });

  test("readyz is 503 naming the broker while Redis cannot be reached", async () => {
    // Port 9 (discard) has no listener on this machine: connections are refused.
    const standalone = await startTestApi({ backend: suite.backend, env: { REDIS_URL: "redis://127.0.0.1:9" } });
    try {
      const response = await standalone.request("/readyz");
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({
        error: "broker unreachable",
        checks: { database: "ok", broker: "unreachable" },
      });
    } finally {
      await standalone.stop();
    }
  });

  test("readyz is 503 naming the database once the database stops answering", async () => {
    const standalone = await startTestApi({ backend: suite.backend });
    try {
      await standalone.shared.database.close();
      const response = await standalone.request("/readyz");
      expect(response.status).toBe(503);
      const body = (await response.json()) as { error: string; checks: Record<string, string> };
      expect(body.error).toMatch(/^database( and broker)? unreachable$/);
      expect(body.checks.database).toBe("unreachable");
    } finally {
      await standalone.stop().catch(() => {});
    }
  });
});

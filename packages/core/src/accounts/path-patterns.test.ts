import { describe, expect, test } from "bun:test";
import { namesOperation, parseAllowedPath, pathAllowed, requestAllowed, uncoveredEntry } from "./path-patterns.ts";

describe("API key path patterns", () => {
  test("a literal pattern allows exactly its path", () => {
    expect(pathAllowed(["/secrets/db"], "/secrets/db")).toBe(true);
    expect(pathAllowed(["/secrets/db"], "/secrets/db2")).toBe(false);
    expect(pathAllowed(["/secrets/db"], "/secrets")).toBe(false);
  });

  test("a trailing * allows every path with that prefix", () => {
    expect(pathAllowed(["/storage/*"], "/storage/kv/orders")).toBe(true);
    expect(pathAllowed(["/storage/*"], "/storage")).toBe(false);
    expect(pathAllowed(["/storage*"], "/storage")).toBe(true);
    expect(pathAllowed(["/storage/*"], "/secrets/x")).toBe(false);
  });

  test("/hub/agent paths need a pattern that names them", () => {
    expect(pathAllowed(["/*"], "/hub/agent/chat")).toBe(false);
    expect(pathAllowed(["/hub/*"], "/hub/agent")).toBe(false);
    expect(pathAllowed(["/hub/*"], "/hub/nodes")).toBe(true);
    expect(pathAllowed(["/hub/agent*"], "/hub/agent/chat")).toBe(true);
    expect(pathAllowed(["/hub/agent/*"], "/hub/agent/chat")).toBe(true);
    expect(pathAllowed(["/hub/agent*"], "/hub/agents")).toBe(true);
  });

  test("encoded or doubled characters do not slip past a restriction", () => {
    expect(pathAllowed(["/hub/*"], "/hub/%61gent/chat")).toBe(false);
    expect(pathAllowed(["/hub/*"], "/hub/AGENT")).toBe(false);
    expect(pathAllowed(["/storage/*"], "//storage/kv")).toBe(true);
    expect(pathAllowed(["/secrets/*"], "/secrets/%E0%A4%A")).toBe(false);
  });

  test("a trailing slash, which routing ignores, neither widens nor narrows a pattern", () => {
    expect(pathAllowed(["/storage/*"], "/storage/")).toBe(false);
    expect(pathAllowed(["/accounts/api-keys/*"], "/accounts/api-keys/")).toBe(false);
    expect(pathAllowed(["/accounts/api-keys/*"], "/accounts/api-keys/01ab/")).toBe(true);
    expect(pathAllowed(["/accounts/users"], "/accounts/users/")).toBe(true);
    expect(pathAllowed(["/*"], "/")).toBe(true);
  });

  test("an encoded slash stays inside its segment, as routing reads it", () => {
    // The gateway named "orders/mapping", not the mappings of the gateway "orders".
    expect(pathAllowed(["/gateway/orders/mapping*"], "/gateway/orders%2Fmapping")).toBe(false);
    expect(pathAllowed(["/gateway/orders/mapping*"], "/gateway/orders/mapping/details")).toBe(true);
    expect(pathAllowed(["/secrets/team/*"], "/secrets/team%2Fdb")).toBe(false);
    expect(pathAllowed(["/secrets/team%2F*"], "/secrets/team%2fdb")).toBe(true);
    expect(pathAllowed(["/secrets/*"], "/secrets/team%2Fdb")).toBe(true);
    expect(pathAllowed(["/secrets/50%25"], "/secrets/50%25")).toBe(true);
    // Under /hub/agent in any spelling is still under /hub/agent.
    expect(pathAllowed(["/*"], "/hub%2Fagent/chat")).toBe(false);
  });

  test("a tRPC call's path template allows only patterns that allow every value of its parameters", () => {
    expect(pathAllowed(["/accounts/api-keys/*"], "/accounts/api-keys/{id}")).toBe(true);
    expect(pathAllowed(["/accounts/*"], "/accounts/api-keys/{id}")).toBe(true);
    expect(pathAllowed(["/accounts/api-keys/{id}"], "/accounts/api-keys/{id}")).toBe(false);
    expect(pathAllowed(["/accounts/api-keys/{*"], "/accounts/api-keys/{id}")).toBe(false);
    expect(pathAllowed(["/accounts/api-keys/01ab"], "/accounts/api-keys/{id}")).toBe(false);
    expect(pathAllowed(["/gateway/*"], "/gateway/{gateway_topic}/mapping/details")).toBe(true);
    expect(pathAllowed(["/gateway/orders/*"], "/gateway/{gateway_topic}/mapping/details")).toBe(false);
    expect(pathAllowed(["/accounts/users"], "/accounts/users")).toBe(true);
    // A path a client sends has its braces encoded: that is a value, not a template.
    expect(pathAllowed(["/secrets/{key}"], "/secrets/%7Bkey%7D")).toBe(true);
  });
});

describe("API key entries with methods", () => {
  test("an entry is methods and a pattern, or a pattern for every method; HEAD counts as GET", () => {
    expect(parseAllowedPath("GET,PUT /storage/kv/orders/*")).toEqual({
      methods: new Set(["GET", "PUT"]),
      pattern: "/storage/kv/orders/*",
    });
    expect(parseAllowedPath("/secrets/db")).toEqual({ methods: null, pattern: "/secrets/db" });
    expect(parseAllowedPath("FETCH /x")).toBe("names FETCH, not one of GET, POST, PUT, PATCH, DELETE");
    for (const bad of ["get /x", "GET  /x", "GET,/x", "/x/*/y", "GET x"])
      expect(typeof parseAllowedPath(bad)).toBe("string");
    const entries = ["GET /accounts/users", "GET,PUT /storage/kv/orders/*", "/secrets/db"];
    expect(requestAllowed(entries, { method: "GET", path: "/accounts/users" })).toBe(true);
    expect(requestAllowed(entries, { method: "HEAD", path: "/accounts/users" })).toBe(true);
    expect(requestAllowed(entries, { method: "POST", path: "/accounts/users" })).toBe(false);
    expect(requestAllowed(entries, { method: "PUT", path: "/storage/kv/orders/keys/1" })).toBe(true);
    expect(requestAllowed(entries, { method: "DELETE", path: "/storage/kv/orders/keys/1" })).toBe(false);
    expect(requestAllowed(entries, { method: "DELETE", path: "/secrets/db" })).toBe(true);
  });

  test("an operation is named only by its method and its own path, * standing for its parameter", () => {
    const invite = { method: "POST", template: "/accounts/users" };
    const removeKey = { method: "DELETE", template: "/accounts/api-keys/{id}" };
    expect(namesOperation(["POST /accounts/users"], invite)).toBe(true);
    expect(namesOperation(["POST,GET /accounts/users"], invite)).toBe(true);
    expect(namesOperation(["/accounts/users"], invite)).toBe(false);
    expect(namesOperation(["POST /accounts/*"], invite)).toBe(false);
    expect(namesOperation(["GET /accounts/users"], invite)).toBe(false);
    expect(namesOperation(["DELETE /accounts/api-keys/*"], removeKey)).toBe(true);
    expect(namesOperation(["DELETE /accounts/*"], removeKey)).toBe(false);
    expect(namesOperation(["DELETE /accounts/api-keys/01ab"], removeKey)).toBe(false);
  });

  test("a wanted entry is covered by a held one with every method and path of it", () => {
    const held = ["GET,PUT /storage/kv/orders/*", "/secrets/app-*", "/hub/agent*"];
    expect(uncoveredEntry(["GET /storage/kv/orders/keys/*", "PUT /storage/kv/orders/keys/1"], held)).toBeUndefined();
    expect(uncoveredEntry(["DELETE /secrets/app-x", "/secrets/app-*", "GET /hub/agent/chat"], held)).toBeUndefined();
    expect(uncoveredEntry(["/storage/kv/orders/*"], held)).toBe("/storage/kv/orders/*");
    expect(uncoveredEntry(["GET /storage/kv/*"], held)).toBe("GET /storage/kv/*");
    expect(uncoveredEntry(["GET /secrets/*"], held)).toBe("GET /secrets/*");
    expect(uncoveredEntry(["GET /hub/agent/x"], ["/hub/*"])).toBe("GET /hub/agent/x");
  });
});

import { describe, expect, test } from "bun:test";
import { buildRouteTable, describeRouteProblem, routeOf } from "./routes.ts";

describe("gateway routes", () => {
  const table = buildRouteTable([
    { method: "GET", path: "/orders/:id", name: "order" },
    { method: "GET", path: "/orders/new", name: "new order form" },
    { method: "GET", path: "/", name: "root" },
    { method: "POST", path: "/orders", name: "create" },
    { method: "DELETE", path: "/orders/:id/items/:item", name: "remove item" },
    { method: "GET", path: "/:section/summary", name: "summary" },
    { method: "GET", path: "/orders/:id/:part", name: "order part" },
  ]);
  const match = (method: string, path: string) => {
    const found = table.match(method, path);
    return found && { name: found.mapping.name, params: found.params };
  };

  test("parameters take one decoded segment each; literal segments win over parameters", () => {
    expect(match("GET", "/orders/42")).toEqual({ name: "order", params: { id: "42" } });
    expect(match("GET", "/orders/new")).toEqual({ name: "new order form", params: {} });
    expect(match("GET", "/orders/a%20b%2Fc")).toEqual({ name: "order", params: { id: "a b/c" } });
    expect(match("DELETE", "/orders/7/items/x-1")).toEqual({ name: "remove item", params: { id: "7", item: "x-1" } });
    // `/orders/summary` could be either; the earlier literal segment decides.
    expect(match("GET", "/orders/summary")).toEqual({ name: "order", params: { id: "summary" } });
    expect(match("GET", "/users/summary")).toEqual({ name: "summary", params: { section: "users" } });
    expect(match("GET", "/orders/1/summary")).toEqual({ name: "order part", params: { id: "1", part: "summary" } });
  });

  test("the root, a trailing slash, and what matches nothing", () => {
    expect(match("GET", "/")).toEqual({ name: "root", params: {} });
    expect(match("GET", "")).toEqual({ name: "root", params: {} });
    expect(match("POST", "/orders/")).toEqual({ name: "create", params: {} });
    expect(match("PUT", "/orders")).toBeUndefined();
    expect(match("GET", "/orders")).toBeUndefined();
    expect(match("GET", "/orders//42")).toBeUndefined();
    expect(match("GET", "/orders/%E0%A4%A")).toBeUndefined();
    expect(match("DELETE", "/orders/7/items")).toBeUndefined();
  });

  test("a parameter named __proto__ is a plain field", () => {
    const odd = buildRouteTable([{ method: "GET", path: "/:__proto__" }]);
    const found = odd.match("GET", "/x");
    expect(found?.params).toEqual(Object.fromEntries([["__proto__", "x"]]));
    expect(Object.getPrototypeOf(found?.params)).toBe(Object.prototype);
  });

  test("routes ignore parameter names, so two paths differing only there are the same route", () => {
    expect(routeOf("/orders/:id")).toBe(routeOf("/orders/:key"));
    expect(routeOf("/orders/:id")).not.toBe(routeOf("/orders/id"));
    expect(routeOf("/")).toBe("/");
  });

  test("paths are checked", () => {
    expect(describeRouteProblem("/")).toBeUndefined();
    expect(describeRouteProblem("/a.b/~c/:d_1")).toBeUndefined();
    expect(describeRouteProblem("a")).toBe("must start with /");
    expect(describeRouteProblem("/a/.")).toBe("must not hold . or .. segments");
    expect(describeRouteProblem("/a/:")).toBe(
      "parameter : must be : then a letter or _, then letters, digits or _ (at most 64)",
    );
    expect(describeRouteProblem("/a%20b")).toBe(
      "segment a%20b may hold only letters, digits, -, ., _ and ~ (or be a parameter :name)",
    );
  });
});

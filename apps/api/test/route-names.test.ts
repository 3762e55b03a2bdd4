import { describe, expect, test } from "bun:test";
import { appRouter, buildOpenApiDocument, coreConfigSchema, toCoreConfig } from "@platform/core";
import { createRouteNamer } from "../src/metrics.ts";

const templates = Object.keys(
  buildOpenApiDocument(toCoreConfig(coreConfigSchema.parse({ LOG_LEVEL: "silent" }))).paths ?? {},
);
const procedures = Object.keys(appRouter._def.procedures);

/** What the namer must answer: the first template of the document that matches the whole path. */
function firstMatch(list: string[], pathname: string): string {
  const matches = (template: string) => {
    const want = template.split("/");
    const have = pathname.split("/");
    return want.length === have.length && want.every((part, i) => part.startsWith("{") || part === have[i]);
  };
  return list.find(matches) ?? "unmatched";
}

describe("route names (the metrics' `route` label)", () => {
  test("every template of the API names the paths it serves, the first in the document's order winning", () => {
    const routeOf = createRouteNamer({ templates, procedures });
    const samples = templates.flatMap((template) => [
      template.replace(/\{[^}]+\}/g, "x1"),
      // A value that is also a literal segment: `/flows/validate` is its own route, not `/flows/{id}`.
      ...templates.filter((other) => other !== template).map((other) => other.replace(/\{[^}]+\}/g, "validate")),
    ]);
    expect(templates.length).toBeGreaterThan(50);
    for (const pathname of samples) {
      if (pathname.startsWith("/gw/") || pathname.startsWith("/webhooks/")) continue;
      expect({ pathname, route: routeOf("GET", pathname) }).toEqual({
        pathname,
        route: firstMatch(templates, pathname),
      });
    }
    expect(routeOf("GET", "/flows/3f1c/runs/extra/deep")).toBe("unmatched");
    expect(routeOf("GET", "/nothing-here")).toBe("unmatched");
  });

  test("a template whose first segment is a parameter is tried in its document place among the others", () => {
    const routeOf = createRouteNamer({ templates: ["/{tenant}/a", "/x/{id}", "/x/b", "/{tenant}/b"], procedures: [] });
    expect(routeOf("GET", "/x/a")).toBe("/{tenant}/a");
    expect(routeOf("GET", "/x/b")).toBe("/x/{id}");
    expect(routeOf("GET", "/y/b")).toBe("/{tenant}/b");
    expect(routeOf("GET", "/y/c")).toBe("unmatched");
    const later = createRouteNamer({ templates: ["/x/{id}", "/{tenant}/a"], procedures: [] });
    expect(later("GET", "/x/a")).toBe("/x/{id}");
    expect(later("GET", "/z/a")).toBe("/{tenant}/a");
  });
});

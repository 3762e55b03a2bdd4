import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

/** Prometheus metrics of one API process: request counts and latency per route. */
export class HttpMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<"method" | "route" | "status">;
  private readonly duration: Histogram<"method" | "route" | "status">;

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    this.requests = new Counter({
      name: "http_requests_total",
      help: "HTTP requests answered, by method, route template and status.",
      labelNames: ["method", "route", "status"],
      registers: [this.registry],
    });
    this.duration = new Histogram({
      name: "http_request_duration_seconds",
      help: "Time to answer an HTTP request, by method, route template and status.",
      labelNames: ["method", "route", "status"],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) };
    this.requests.inc(labels);
    this.duration.observe(labels, seconds);
  }

  async render(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}

/**
 * Names a request's route by its template, so that labels stay few: `/gateway/{gateway_topic}`,
 * never `/gateway/abc`. Paths matching nothing are `unmatched`. A path is tried, in the
 * document's order, against the templates of as many segments only (a template's parameter
 * is one segment): a few regular expressions a request, not one per template.
 */
export function createRouteNamer(known: {
  templates: string[];
  procedures: string[];
}): (method: string, pathname: string) => string {
  const procedures = new Set(known.procedures);
  const fixed = new Set(["/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/mcp"]);
  const segmentsOf = (path: string) => path.split("/").length;
  const bySegments = Map.groupBy(
    known.templates.map((template) => ({
      template,
      regex: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`),
    })),
    ({ template }) => segmentsOf(template),
  );
  return (_method, pathname) => {
    if (fixed.has(pathname)) return pathname;
    if (pathname.startsWith("/docs/")) return "/docs";
    if (pathname.startsWith("/gw/")) return "/gw/{gateway_topic}";
    // The busiest path, named without trying every template.
    if (pathname.startsWith("/webhooks/") && !pathname.includes("/", "/webhooks/".length)) {
      return "/webhooks/{webhook_id}";
    }
    if (pathname.startsWith("/trpc/")) {
      const procedure = pathname.slice("/trpc/".length);
      return procedures.has(procedure) ? `/trpc/${procedure}` : "/trpc";
    }
    const candidates = bySegments.get(segmentsOf(pathname)) ?? [];
    return candidates.find((p) => p.regex.test(pathname))?.template ?? "unmatched";
  };
}

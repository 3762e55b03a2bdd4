import type { Broker, WorkerRuntime } from "@platform/core";
import type { DatabaseHandle } from "@platform/db";

/**
 * GET /healthz: 200 while the runtime runs and both the database and the broker
 * answer; 503 (with which check failed) otherwise, including during shutdown.
 */
export function serveHealth(options: {
  port: number;
  runtime: WorkerRuntime;
  broker: Broker;
  database: DatabaseHandle;
}): { port: number; stop(): Promise<void> } {
  const check = async (probe: () => Promise<void>) => {
    try {
      await probe();
      return "ok";
    } catch {
      return "unavailable";
    }
  };
  const server = Bun.serve({
    port: options.port,
    async fetch(request) {
      const { pathname } = new URL(request.url);
      if (pathname !== "/healthz") return Response.json({ error: "not found" }, { status: 404 });
      if (request.method !== "GET") return Response.json({ error: "method not allowed" }, { status: 405 });
      const [database, broker] = await Promise.all([
        check(() => options.database.ping(1000)),
        check(() => options.broker.ping()),
      ]);
      const running = options.runtime.running;
      const healthy = running && database === "ok" && broker === "ok";
      return Response.json(
        { status: healthy ? "ok" : running ? "unavailable" : "stopping", checks: { database, broker } },
        { status: healthy ? 200 : 503 },
      );
    },
  });
  return {
    port: server.port ?? options.port,
    stop: () => server.stop(true),
  };
}

import type { Services } from "@platform/core";

type Check = "ok" | "unreachable";

/** `GET /readyz`: 200 when the database and the broker both answer, else 503 naming what is down. */
export async function readiness(services: Services): Promise<Response> {
  const probe = (ping: () => Promise<void>): Promise<Check> =>
    ping().then(
      () => "ok",
      () => "unreachable",
    );
  const [database, broker] = await Promise.all([
    probe(() => services.database.ping(2000)),
    probe(() => services.broker.ping()),
  ]);
  const checks = { database, broker };
  const down = Object.entries(checks)
    .filter(([, state]) => state !== "ok")
    .map(([name]) => name);
  if (down.length === 0) return Response.json({ status: "ready", checks });
  return Response.json({ error: `${down.join(" and ")} unreachable`, checks }, { status: 503 });
}

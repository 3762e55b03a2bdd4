import { databaseBackends, type TestBackend, testEnv } from "@platform/db/testing";

/** The stacks an HTTP suite runs on: PGlite and PostgreSQL with their own broker, and PostgreSQL with Redis. */
export function apiBackends(): { backend: TestBackend; redis: boolean; label: string; skip: string | false }[] {
  const postgres = databaseBackends().find((entry) => entry.backend === "postgres");
  return [
    ...databaseBackends().map(({ backend, skip }) => ({ backend, redis: false, label: backend, skip })),
    {
      backend: "postgres",
      redis: true,
      label: "postgres + redis",
      skip: postgres?.skip || (testEnv.REDIS_URL ? false : "REDIS_URL is not set"),
    },
  ];
}

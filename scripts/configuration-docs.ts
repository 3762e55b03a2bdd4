// Writes docs/configuration.md (`bun run docs:config`) from the settings' schemas of every
// process. Repository tooling, not part of any app: it reads both apps' schemas, which no app
// may do of another (the dependency check in `bun run lint`).
import { apiEnvSchema } from "../apps/api/src/config.ts";
import { workerEnvSchema } from "../apps/worker/src/config.ts";
import {
  configurationReference,
  coreConfigSchema,
  type DescribedVariable,
  tracingEnvSchema,
} from "../packages/core/src/index.ts";

/** Variables only compose.yaml reads (scale-out in containers, see docs/deploy.md). */
export const COMPOSE_SETTINGS = {
  POSTGRES_PASSWORD: {
    description:
      "Password of the compose project's PostgreSQL user `platform`; compose.yaml builds DATABASE_URL from it. Required there.",
  },
  HTTP_PORT: {
    description: "Host port of the proxy in front of the two API processes; PUBLIC_URL should name it.",
    fallback: "3000",
  },
  INGRESS_HOST: {
    description:
      "Host name the proxy serves webhooks and gateways on, apart from the API (INGRESS_URL should name it).",
    fallback: "hooks.localhost",
  },
} satisfies Record<string, DescribedVariable>;

/** docs/configuration.md as the settings' schemas describe them. */
export function configurationDocument(): string {
  return configurationReference([
    {
      title: "Every process",
      about: "Read by the API (both modes) and by the worker.",
      settings: coreConfigSchema.shape,
    },
    { title: "API", about: "Read by `bun run start` and `bun run start:api`.", settings: apiEnvSchema.shape },
    { title: "Worker", about: "Read by `bun run start:worker`.", settings: workerEnvSchema.shape },
    {
      title: "Traces (OpenTelemetry)",
      about:
        "Read by the API and the worker, as the OpenTelemetry specification names them; unset, nothing is traced (docs/guide/observability.md).",
      settings: tracingEnvSchema.shape,
    },
    { title: "Compose", about: "Read by `compose.yaml` only.", settings: COMPOSE_SETTINGS },
  ]);
}

if (import.meta.main) {
  const path = new URL("../docs/configuration.md", import.meta.url).pathname;
  await Bun.write(path, configurationDocument());
  process.stdout.write(`wrote ${path}\n`);
}

/**
 * Checks compose.yaml for the deployment the README describes, without a container
 * engine: PostgreSQL 17 and Redis 7 (append-only) with healthchecks, two API and two
 * worker processes that wait for both to be healthy, one published port in front of
 * the APIs, and every required setting documented in .env.example.
 * Usage: bun scripts/compose-check.ts [compose.yaml]. Prints a one-line summary, or
 * each problem and exits 1.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";

interface Service {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  environment?: Record<string, string>;
  env_file?: string | string[];
  depends_on?: Record<string, { condition?: string }>;
  healthcheck?: { test?: unknown };
  ports?: string[];
  volumes?: string[];
  deploy?: { replicas?: number };
}

const file = process.argv[2] ?? "compose.yaml";
const root = dirname(file);
const text = readFileSync(file, "utf8");
const compose = Bun.YAML.parse(text) as { services?: Record<string, Service>; volumes?: Record<string, unknown> };
const services = compose.services ?? {};
const problems: string[] = [];
const check = (ok: boolean, problem: string) => {
  if (!ok) problems.push(problem);
};

const commandOf = (service: Service) =>
  Array.isArray(service.command) ? service.command.join(" ") : (service.command ?? "");
const replicasOf = (service: Service) => service.deploy?.replicas ?? 1;
const withRole = (role: string) => Object.entries(services).filter(([, s]) => commandOf(s) === `bun run ${role}`);
const named = (prefix: string) => Object.entries(services).find(([, s]) => s.image?.startsWith(prefix));

const postgres = named("postgres:");
check(postgres?.[1].image === "postgres:17", "a postgres:17 service");
const redis = named("redis:");
check(redis?.[1].image === "redis:7", "a redis:7 service");
check(/--appendonly yes/.test(redis ? commandOf(redis[1]) : ""), "Redis with --appendonly yes");
for (const [name, service] of [postgres, redis].filter((entry) => entry !== undefined)) {
  check(service.healthcheck?.test !== undefined, `a healthcheck on ${name}`);
  check(
    (service.volumes ?? []).some((volume) => compose.volumes?.[volume.split(":")[0] ?? ""] !== undefined),
    `a named volume for ${name}`,
  );
}

const apis = withRole("start:api");
const workers = withRole("start:worker");
const count = (entries: [string, Service][]) => entries.reduce((sum, [, s]) => sum + replicasOf(s), 0);
check(count(apis) === 2, `two API processes (found ${count(apis)})`);
check(count(workers) === 2, `two worker processes (found ${count(workers)})`);
for (const [name, service] of [...apis, ...workers]) {
  check(service.image !== undefined && service.build !== undefined, `${name} builds this repository's image`);
  for (const store of [postgres?.[0], redis?.[0]])
    check(
      service.depends_on?.[store ?? ""]?.condition === "service_healthy",
      `${name} waits for ${store} to be healthy`,
    );
  check([service.env_file].flat().includes(".env"), `${name} reads .env`);
  check(
    service.environment?.DATABASE_URL?.includes(`@${postgres?.[0]}:5432/`) === true,
    `${name}: DATABASE_URL on ${postgres?.[0]}`,
  );
  check(service.environment?.REDIS_URL === `redis://${redis?.[0]}:6379`, `${name}: REDIS_URL on ${redis?.[0]}`);
  check((service.ports ?? []).length === 0, `${name} publishes no port of its own`);
}

const published = Object.entries(services).filter(([, s]) => (s.ports ?? []).length > 0);
check(published.length === 1, `exactly one service publishes a port (found ${published.map(([n]) => n).join(", ")})`);
const proxy = published[0];
if (proxy) {
  const mounted = (proxy[1].volumes ?? []).map((volume) => volume.split(":")[0] ?? "");
  const config = mounted.find((path) => path.startsWith("./"));
  const proxyConfig = config ? readFileSync(join(root, config), "utf8") : "";
  for (const [name] of apis) check(proxyConfig.includes(`${name}:3000`), `the proxy forwards to ${name}:3000`);
  for (const [name] of apis)
    check(proxy[1].depends_on?.[name]?.condition === "service_healthy", `the proxy waits for ${name} to be healthy`);
  for (const [name, service] of apis)
    check(service.environment?.TRUSTED_PROXY_HOPS === "1", `${name} takes the client's address from the proxy`);
}

// Every variable compose insists on (${NAME:?...}) is documented in .env.example.
const required = new Set([...text.matchAll(/\$\{([A-Z_]+):\?/g)].map((match) => match[1]));
const example = readFileSync(join(root, ".env.example"), "utf8");
for (const name of required)
  check(new RegExp(`^#? ?${name}=`, "m").test(example), `${name} documented in .env.example`);

if (problems.length > 0) {
  for (const problem of problems) console.error(`compose.yaml: missing ${problem}`);
  process.exit(1);
}
process.stdout.write(
  `postgres:17, redis:7 append-only, ${count(apis)} API processes behind ${proxy?.[0]} on ${proxy?.[1].ports?.[0]}, ${count(workers)} workers, required: ${[...required].join(", ")}\n`,
);

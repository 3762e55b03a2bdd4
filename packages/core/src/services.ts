import type { Database, DatabaseHandle } from "@platform/db";
import type { Kysely } from "kysely";
import type { AccountsDeps } from "./accounts/deps.ts";
import type { AccessTarget } from "./accounts/path-patterns.ts";
import type { Broker } from "./broker/port.ts";
import type { Credential, Principal } from "./caller.ts";
import type { CoreConfig } from "./config.ts";
import type { RunEvents } from "./engine/events.ts";
import type { McpTools } from "./engine/mcp-call/tools.ts";
import type { OutboundSlots } from "./engine/outbound-slots.ts";
import type { RunQueue } from "./engine/run-queue.ts";
import type { Registry } from "./hub/registry/service.ts";
import type { AccountLimits } from "./limits/account-limits.ts";
import type { Logger } from "./logger.ts";
import type { MetricsRecorder } from "./monitoring/recorder.ts";
import type { RunsService } from "./runs/service.ts";
import type { Sealer } from "./sealing.ts";
import type { DefinitionCache } from "./storage/definition-cache.ts";

/** Verifies a credential for a request (its method and path); throws DomainError `unauthorized` or `forbidden`. */
export type Authenticator = (credential: Credential, target: AccessTarget) => Promise<Principal>;

/** Everything a procedure may use, built once per process by `createServices`. */
export interface Services {
  config: CoreConfig;
  logger: Logger;
  database: DatabaseHandle;
  db: Kysely<Database>;
  broker: Broker;
  /** Per-account counters behind the metrics endpoint (`runs.started`, `stream.bytes`, ...). */
  metrics: MetricsRecorder;
  authenticate: Authenticator;
  /** Encrypts secrets kept in the database. */
  sealer: Sealer;
  /** Signing keys, price catalog and settings of accounts and authentication. */
  accounts: AccountsDeps;
  /** Stream and bucket definitions kept in this process, dropped when any process changes one. */
  storageDefinitions: DefinitionCache;
  /** The streams runs are queued on for the workers (RUN_QUEUE_PARTITIONS). */
  runQueue: RunQueue;
  /** Starting runs of flows (by hand, webhooks, gateways) and reading them. */
  runs: RunsService;
  /** Events for the runs waiting on them (`POST /events`, `event.send`, `wait.event`). */
  events: RunEvents;
  /** The public MCP registry's mirror: its sync and the endpoint's reads. */
  registry: Registry;
  /** Each account's plan and its limits on what accounts share (storage bytes, rates). */
  limits: AccountLimits;
  /** Outbound requests of runs in flight in this process, per run and per account (see outbound-slots.ts). */
  outbound: OutboundSlots;
  /** The platform as an MCP client: `mcp.call` steps and the tool lists their saves are checked against. */
  mcp: McpTools;
}

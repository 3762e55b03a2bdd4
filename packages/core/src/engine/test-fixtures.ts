import { afterAll, beforeAll } from "bun:test";
import type { Database, DatabaseHandle } from "@platform/db";
import { openTestDatabase, type TestBackend } from "@platform/db/testing";
import type { Insertable, Kysely } from "kysely";
import { createBroker } from "../broker/index.ts";
import type { Broker } from "../broker/port.ts";
import type { ControlDeps } from "./run-ends.ts";
import { createRunQueue } from "./run-queue.ts";
import { StepFailure } from "./step-failure.ts";

/** An account and one active flow of it at revision 1: what a run row needs to exist, for engine tests. */
export async function insertAccountWithFlow(db: Kysely<Database>, accountId: string, flowId: string): Promise<void> {
  await db
    .insertInto("accounts")
    .values({ id: accountId, name: "a", display_name: "a", root_email: "a@x.io" })
    .execute();
  await insertFlow(db, accountId, flowId);
}

/** A flow of the account at revision 1, active unless `columns` say otherwise (a `deleted_at`, say). */
export async function insertFlow(
  db: Kysely<Database>,
  accountId: string,
  flowId: string,
  columns: Partial<Insertable<Database["flows"]>> = {},
): Promise<void> {
  await db
    .insertInto("flows")
    .values({
      id: flowId,
      account_id: accountId,
      name: "f",
      description: "",
      active: true,
      trigger: "{}",
      signing_secret: null,
      webhook_id: crypto.randomUUID(),
      revision: 1,
      ...columns,
    })
    .execute();
}

/** What a flow control needs, for tests of one whose runs are written by hand: none of them was started by another (`flow.call`). */
export function controlDeps(db: Kysely<Database>, broker: Broker): ControlDeps {
  return {
    db,
    broker,
    runQueue: createRunQueue(broker, 1),
    events: {
      wake(): Promise<void> {
        throw new Error("no run here was started by another");
      },
    },
  };
}

/**
 * For a describe of flow-control tests: a test database of `backend` with a Broker on it,
 * opened before its tests and closed after them; `db`, `broker` and `deps()` once open.
 */
export function controlTestBed(backend: TestBackend) {
  let database: DatabaseHandle | undefined;
  let broker: Broker | undefined;
  beforeAll(async () => {
    database = await openTestDatabase(backend);
    broker = await createBroker({ database });
  }, 60_000);
  afterAll(async () => {
    await broker?.close();
    await database?.close();
  });
  const opened = () => {
    if (!database || !broker) throw new Error("the test bed opens before the tests");
    return { db: database.db, broker };
  };
  return {
    get db(): Kysely<Database> {
      return opened().db;
    },
    get broker(): Broker {
      return opened().broker;
    },
    deps(): ControlDeps {
      const { db, broker } = opened();
      return controlDeps(db, broker);
    },
  };
}

/** The StepFailure a step (or an evaluation) rejects with; anything else it throws, or succeeding, fails the test. */
export async function failure(promise: Promise<unknown>): Promise<StepFailure> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof StepFailure) return error;
    throw error;
  }
  throw new Error("it succeeded");
}

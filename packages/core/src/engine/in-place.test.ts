import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DatabaseHandle } from "@platform/db";
import { openTestDatabase } from "@platform/db/testing";
import { eventually } from "../broker/test-backends.ts";
import { createLogger } from "../logger.ts";
import { DEFAULT_LOG_LIMITS } from "./attempt-notes.ts";
import { createInPlaceRunner } from "./in-place.ts";
import { insertAccountWithFlow, insertFlow } from "./test-fixtures.ts";

/**
 * Which starts a process executes in place (in-place.ts): only those of the account whose
 * own start taught it the flow, and only of flows that only compute.
 */
describe("runs in place, on pglite", () => {
  let database: DatabaseHandle;
  const owner = "acct-in-place";
  const computing = crypto.randomUUID();
  const reaching = crypto.randomUUID();

  beforeAll(async () => {
    database = await openTestDatabase("pglite");
    await insertAccountWithFlow(database.db, owner, computing);
    await insertFlow(database.db, owner, reaching);
    const revision = (flowId: string, steps: unknown[]) => ({
      flow_id: flowId,
      revision: 1,
      trigger: "{}",
      steps: JSON.stringify(steps),
      on_failure: "[]",
    });
    await database.db
      .insertInto("flow_revisions")
      .values([
        revision(computing, [{ name: "sum", subject: "transform", payload: { sum: "{{trigger.a}}" } }]),
        revision(reaching, [{ name: "get", subject: "kv.get", payload: { bucket: "b", key: "k" } }]),
      ] as never)
      .execute();
  }, 60_000);
  afterAll(() => database.close());

  // What learning reads is the database; what executing needs besides is not used here.
  const runner = () =>
    createInPlaceRunner({
      db: database.db,
      sealer: {} as never,
      limits: {} as never,
      events: {} as never,
      logger: createLogger({ level: "silent", name: "in-place-test" }),
      storageDefinitions: {} as never,
      config: { stepOutputMaxBytes: 1_000_000, forEachMaxItems: 100, logLimits: DEFAULT_LOG_LIMITS },
    });

  test("a flow that only computes is learned for its account alone; another account naming it is not run in place", async () => {
    const inPlace = runner();
    expect(inPlace.revisionOf(owner, computing)).toBeUndefined();
    inPlace.learn(owner, computing, 1);
    await eventually(() => inPlace.revisionOf(owner, computing) === 1);
    expect(inPlace.revisionOf("acct-stranger", computing)).toBeUndefined();
  });

  test("a flow with a step that reaches out is never learned", async () => {
    const inPlace = runner();
    inPlace.learn(owner, reaching, 1);
    inPlace.learn(owner, computing, 1);
    // Both learnings read their revisions; the computing one's answer shows the other's is in too.
    await eventually(() => inPlace.revisionOf(owner, computing) === 1);
    expect(inPlace.revisionOf(owner, reaching)).toBeUndefined();
  });
});

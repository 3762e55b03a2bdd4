import type { TestApi } from "./harness.ts";
import { type Caller, call } from "./storage-helpers.ts";

/** An inline step of a flow; options left out take the flows API's defaults. */
export interface TestStep {
  name: string;
  subject: string;
  payload?: Record<string, unknown>;
  options?: Partial<{ timeout: number; attempts: number; backoff_ms: number }>;
}

/** Creates a flow of inline steps through the flows API and answers its id. */
export async function createFlow(api: TestApi, caller: Caller, steps: TestStep[]): Promise<string> {
  const created = await call(api, caller, "POST", "/flows", {
    name: `flow of ${steps.map((step) => step.name).join(", ")}`,
    steps: steps.map((step) => ({ node_type: "function", payload: {}, ...step })),
  });
  if (created.status !== 200) throw new Error(`POST /flows: ${created.status} ${JSON.stringify(created.body)}`);
  return created.body.data.id;
}

/** Starts a run by hand; answers the status and body. */
export function startRun(api: TestApi, caller: Caller | null, flowId: string, trigger?: unknown, query = "") {
  return call(api, caller, "POST", `/flows/${flowId}/runs${query}`, trigger);
}

const FINAL = new Set(["succeeded", "failed"]);

/** Reads a run until it has ended (or `status` says so); the test's own timeout bounds the wait. */
export async function runUntil(
  api: TestApi,
  caller: Caller,
  runId: string,
  // biome-ignore lint/suspicious/noExplicitAny: the assertions that read a body are its type check
  done = (run: any) => FINAL.has(run.status),
) {
  for (;;) {
    const read = await call(api, caller, "GET", `/runs/${runId}`);
    if (read.status !== 200) throw new Error(`GET /runs/${runId}: ${read.status} ${JSON.stringify(read.body)}`);
    if (done(read.body)) return read.body;
    await Bun.sleep(25);
  }
}

/**
 * The vocabulary of the HTTP suites: who calls (`Caller`), how (`call`), and the flows and
 * runs most suites need. A suite starts its server with `startTestApi` (harness.ts) and then
 * speaks through these, so that a request, a flow or a run reads the same in every file.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bearer, signUp } from "./accounts-helpers.ts";
import type { TestApi } from "./harness.ts";

/** A signed-in user of an account, as requests present it. */
export interface Caller {
  accountId: string;
  headers: Record<string, string>;
}

/** A new account, signed in. */
export async function newCaller(api: TestApi, tag: string): Promise<Caller> {
  const { auth } = await signUp(api, tag);
  return { accountId: auth.account.id, headers: bearer(auth.auth_token) };
}

/** A JSON request as `caller` (null: anonymous), answering the status, parsed body and headers. */
export async function call(
  api: TestApi,
  caller: Pick<Caller, "headers"> | null,
  method: string,
  path: string,
  json?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: the assertions that read a body are its type check
): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await api.request(path, { method, headers: caller?.headers ?? {}, json });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null, headers: response.headers };
}

/**
 * A PLAN_LIMITS_FILE for `startTestApi`'s env: each plan a partial set of limits over the
 * defaults (`{"few-events": {"event_bytes": 300}}`), in a file of its own.
 */
export function planLimitsFile(plans: Record<string, Record<string, number>>): string {
  const file = join(mkdtempSync(join(tmpdir(), "plan-limits-")), "limits.json");
  writeFileSync(file, JSON.stringify(plans));
  return file;
}

/**
 * Puts the caller's account on `plan`. A process keeps an account's plan for a minute once it
 * has read it: call this before anything of the account meets a limit.
 */
export async function putOnPlan(api: TestApi, caller: Caller, plan: string): Promise<void> {
  await api.services.db.updateTable("accounts").set({ plan }).where("id", "=", caller.accountId).execute();
}

/** What every storage failure answers: exactly `{error: <code>}`. */
export const storageError = (status: number, error: string) => ({ status, body: { error } });

/** An inline step of a flow; options left out take the flows API's defaults. */
export interface TestStep {
  name: string;
  subject: string;
  payload?: unknown;
  options?: Partial<{ timeout: number; attempts: number; backoff_ms: number }>;
}

const ECHO: TestStep[] = [{ name: "echo", subject: "transform", payload: { ok: true } }];

/** Creates a flow of inline steps through the flows API (expecting 200) and answers its id. */
export async function createFlow(
  api: TestApi,
  caller: Pick<Caller, "headers">,
  steps: TestStep[] = ECHO,
): Promise<string> {
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

/** Reads a run until it has ended (or `done` says so); the test's own timeout bounds the wait. */
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

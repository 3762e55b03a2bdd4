import { describe, expect, test } from "bun:test";
import type { AttemptRecord } from "@platform/db";
import { attemptNotes, type LogLimits, TRUNCATED } from "./attempt-notes.ts";
import { createRecordBudget } from "./record-budget.ts";
import { createRunSecrets } from "./run-secrets.ts";
import type { CapturedLogs } from "./sandbox/index.ts";

const SECRET = "sk_live_abcdef123456";

async function runSecrets() {
  const secrets = createRunSecrets(async () => ({ api_key: SECRET }), "account");
  await secrets.read(["api_key"]);
  return secrets;
}

const lines = (...messages: string[]): CapturedLogs => ({
  lines: messages.map((message) => ({ level: "log", message, at: Date.parse("2026-11-30T10:00:00Z") })),
  dropped: 0,
});

async function kept(logs: CapturedLogs, limits: LogLimits, recordLimit = 1_000_000, recorded = 0) {
  const budget = createRecordBudget({ limit: recordLimit, plan: "free", logs: limits.runBytes }, recorded, {});
  const notes = attemptNotes(await runSecrets(), budget, limits);
  notes.note({ logs });
  const attempt: AttemptRecord = { started_at: new Date().toISOString() };
  notes.keep(attempt);
  return { logs: attempt.logs ?? [], used: budget.used };
}

const roomy: LogLimits = { stepLines: 100, stepBytes: 16_384, runBytes: 65_536 };

describe("an attempt's console lines as the run keeps them", () => {
  test("are redacted of the run's secret values in every spelling, and their bytes are counted", async () => {
    const { logs, used } = await kept(
      lines(`key ${SECRET}`, `json {"k":"${SECRET}"}`, `url ?k=${encodeURIComponent(SECRET)}`),
      roomy,
    );
    expect(logs).toEqual([
      { level: "log", message: "key [secret:api_key]", at: "2026-11-30T10:00:00.000Z" },
      { level: "log", message: 'json {"k":"[secret:api_key]"}', at: "2026-11-30T10:00:00.000Z" },
      { level: "log", message: "url ?k=[secret:api_key]", at: "2026-11-30T10:00:00.000Z" },
    ]);
    expect(used).toBe(logs.reduce((sum, line) => sum + Buffer.byteLength(line.message), 0));
  });

  test("a line the sandbox cut inside a secret keeps none of it", async () => {
    const cut: CapturedLogs = {
      lines: [{ level: "warn", message: `token=${SECRET.slice(0, 9)}`, at: 0, cut: true }],
      dropped: 0,
    };
    const { logs } = await kept(cut, roomy);
    expect(logs.map((line) => line.message)).toEqual([`token=${TRUNCATED}`]);
  });

  test("stop at the attempt's lines and bytes: a line past them is cut, the rest counted in a last line", async () => {
    const many = lines(...Array.from({ length: 10 }, (_, n) => `line ${n}`));
    many.dropped = 9_990;
    const byLines = await kept(many, { ...roomy, stepLines: 3 });
    expect(byLines.logs.map((line) => line.message)).toEqual([
      "line 0",
      "line 1",
      "line 2",
      "… 9,997 more lines dropped: an attempt keeps 3 lines and 16,384 bytes of them, a run 65,536 bytes",
    ]);
    expect(byLines.logs.at(-1)?.level).toBe("warn");
    const byBytes = await kept(lines("x".repeat(30), "é".repeat(40), "never"), { ...roomy, stepBytes: 50 });
    const [first, second, last] = byBytes.logs.map((line) => line.message);
    expect(first).toBe("x".repeat(30));
    // 20 bytes were left: the marker takes 15 (UTF-8), and two é take 4; no é is cut in half
    expect(second).toBe(`éé${TRUNCATED}`);
    expect(last).toStartWith("… 1 more line dropped");
  });

  test("stop at what the run may still keep of them, and at what it may still record", async () => {
    const long = lines("a".repeat(100), "b".repeat(100));
    const byRun = await kept(long, { ...roomy, runBytes: 150 });
    expect(byRun.logs[1]?.message).toBe(`${"b".repeat(50 - Buffer.byteLength(TRUNCATED))}${TRUNCATED}`);
    const full = await kept(long, roomy, 1_000, 1_000);
    expect(full.logs.map((line) => line.message)).toEqual([expect.stringMatching(/^… 2 more lines dropped/)]);
  });

  test("notes after the attempt ended are not kept", async () => {
    const budget = createRecordBudget({ limit: 1000, plan: "free" }, 0, {});
    const notes = attemptNotes(await runSecrets(), budget, roomy);
    const attempt: AttemptRecord = { started_at: new Date().toISOString() };
    notes.keep(attempt);
    notes.note({ logs: lines("too late") });
    notes.keep(attempt);
    expect(attempt.logs).toBeUndefined();
  });

  test("an http.request's call is kept with its URL redacted, and the URL counted", async () => {
    const budget = createRecordBudget({ limit: 1000, plan: "free" }, 0, {});
    const notes = attemptNotes(await runSecrets(), budget, roomy);
    const attempt: AttemptRecord = { started_at: new Date().toISOString() };
    const call = { method: "GET", status: 200, duration_ms: 12, request_bytes: 0, response_bytes: 34 };
    notes.note({ http: { ...call, url: `https://api.example/v1?key=${SECRET}` } });
    notes.keep(attempt);
    expect(attempt.http).toEqual({ ...call, url: "https://api.example/v1?key=[secret:api_key]" });
    budget.countErrors("call", { status: "succeeded", attempts: [attempt], started_at: attempt.started_at });
    expect(budget.used).toBe(Buffer.byteLength("https://api.example/v1?key=[secret:api_key]"));
  });
});

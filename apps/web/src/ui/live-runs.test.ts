import { describe, expect, test } from "bun:test";
import type { RunStatus } from "@platform/client";
import { type ListedRun, refreshLiveRows } from "./live-runs.ts";

/** Run ids that sort by age, as UUIDv7s do: `r10` is newer than `r09`. */
const id = (n: number) => `r${String(n).padStart(2, "0")}`;
const run = (n: number, status: RunStatus): ListedRun => ({ id: id(n), status });

/** The platform's list, newest first, read `size` runs at a time below a cursor; every cursor read is kept. */
function platform(runs: ListedRun[], size: number) {
  const cursors: (string | undefined)[] = [];
  const read = async (cursor: string | undefined) => {
    cursors.push(cursor);
    const older = runs.filter((r) => cursor === undefined || r.id < cursor);
    const data = older.slice(0, size);
    return { data, next_cursor: older.length > size ? (data.at(-1)?.id ?? null) : null };
  };
  return { read, cursors };
}

describe("refreshing the live rows of a run list below its newest page", () => {
  test("a run that ended since its row was loaded is read again, with the rows around it, in one read", async () => {
    // Shown: r10..r01; the newest page (r10..r08) was just read; r05 was queued when its page loaded.
    const shown = [10, 9, 8, 7, 6].map((n) => run(n, "succeeded"));
    shown.push(run(5, "queued"), ...[4, 3, 2, 1].map((n) => run(n, "failed")));
    const now = shown.map((r) => (r.id === id(5) ? run(5, "succeeded") : r));
    const { read, cursors } = platform(now, 3);
    const fresh = new Set([id(10), id(9), id(8)]);
    const { runs } = await refreshLiveRows(shown, fresh, read, { maxReads: 5, after: "" });
    expect(cursors).toEqual([id(6)]);
    expect(runs.find((r) => r.id === id(5))?.status).toBe("succeeded");
  });

  test("reads nothing when every row below the newest page has ended or was just read", async () => {
    const shown = [run(4, "running"), run(3, "succeeded"), run(2, "cancelled"), run(1, "rejected")];
    const { read, cursors } = platform(shown, 2);
    const result = await refreshLiveRows(shown, new Set([id(4)]), read, { maxReads: 5, after: "" });
    expect(cursors).toEqual([]);
    expect(result).toEqual({ runs: [], resumeAfter: "" });
  });

  test("a row that left a status filter (absent from the filtered newest page) is read whatever its status now", async () => {
    const shown = [run(3, "queued"), run(2, "queued"), run(1, "queued")];
    const now = [run(3, "queued"), run(2, "running"), run(1, "queued")];
    const { read, cursors } = platform(now, 1);
    // The filtered newest page (status=queued) brought r03 and r01: r02 left the filter.
    const { runs } = await refreshLiveRows(shown, new Set([id(3), id(1)]), read, { maxReads: 5, after: "" });
    expect(cursors).toEqual([id(3)]);
    expect(runs).toEqual([run(2, "running")]);
  });

  test("more live rows than a poll may read are read over several polls, then from the top again", async () => {
    // Live rows far apart: r12, r08, r04, each needing a read of its own (pages of 2).
    const shown = [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1].map((n) => run(n, n % 4 === 0 ? "queued" : "failed"));
    const { read, cursors } = platform(shown, 2);
    const first = await refreshLiveRows(shown, new Set(), read, { maxReads: 2, after: "" });
    expect(cursors).toEqual([undefined, id(9)]);
    expect(first.resumeAfter).toBe(id(7));
    const second = await refreshLiveRows(shown, new Set(), read, { maxReads: 2, after: first.resumeAfter });
    expect(cursors.slice(2)).toEqual([id(5)]);
    expect(second.resumeAfter).toBe("");
    await refreshLiveRows(shown, new Set(), read, { maxReads: 2, after: second.resumeAfter });
    expect(cursors.slice(3)).toEqual([undefined, id(9)]);
  });
});

import { describe, expect, test } from "bun:test";
import { runFilterOf, runFilterSearch } from "./run-filter.ts";

describe("a run list's filter in the page's address", () => {
  test("keeps a known status and the bounds as typed", () => {
    expect(runFilterSearch({ status: "failed", from: "2026-11-27T09:00", to: "2026-11-27T10:30" })).toEqual({
      status: "failed",
      from: "2026-11-27T09:00",
      to: "2026-11-27T10:30",
    });
  });

  test("drops what is no filter: an unknown status, an empty or non-text bound, other keys", () => {
    expect(runFilterSearch({ status: "finished", from: "", to: 5, page: "2" })).toEqual({});
    expect(runFilterSearch({})).toEqual({});
  });

  test("asks the API for the status and the bounds as instants, none where none is set", () => {
    const asked = runFilterOf({ status: "queued", from: "2026-11-27T09:00" });
    expect(asked).toEqual({ status: "queued", from: new Date("2026-11-27T09:00").toISOString() });
    expect(runFilterOf({})).toEqual({});
  });
});

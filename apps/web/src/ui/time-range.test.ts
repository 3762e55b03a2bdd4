import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { instantOf, timeRangeOf } from "./time-range.ts";

const zone = process.env.TZ;
const inZone = (tz: string) => {
  process.env.TZ = tz;
};

describe("a run list's time range", () => {
  beforeAll(() => inZone("Europe/Berlin"));
  afterAll(() => {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
  });

  test("From and To are read in the person's own time zone, summer time included", () => {
    expect(timeRangeOf("2026-01-15T09:30", "2026-07-15T18:00")).toEqual({
      from: "2026-01-15T08:30:00.000Z",
      to: "2026-07-15T16:00:00.000Z",
    });
    inZone("Asia/Tokyo");
    expect(timeRangeOf("2026-01-15T09:30", "")).toEqual({ from: "2026-01-15T00:30:00.000Z" });
    inZone("Europe/Berlin");
  });

  test("seconds, when the field shows them, are kept", () => {
    expect(instantOf("2026-01-15T09:30:15")).toBe("2026-01-15T08:30:15.000Z");
  });

  test("an empty field is no bound: the list is open on that side", () => {
    expect(timeRangeOf("", "")).toEqual({});
    expect(timeRangeOf("", "2026-01-15T10:00")).toEqual({ to: "2026-01-15T09:00:00.000Z" });
  });

  test("a field that holds no time is no bound, rather than a failure of the page", () => {
    expect(instantOf("2026-13-45T99:99")).toBeUndefined();
    expect(timeRangeOf("soon", "2026-01-15T10:00")).toEqual({ to: "2026-01-15T09:00:00.000Z" });
  });
});

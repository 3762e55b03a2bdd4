import { describe, expect, test } from "bun:test";
import { createRunQueue, jumpHash } from "./run-queue.ts";

const flows = Array.from({ length: 20_000 }, () => crypto.randomUUID());
// Placing flows touches no broker.
const placements = (partitions: number) => {
  const queue = createRunQueue({} as never, partitions);
  return flows.map((flow) => queue.partitionOf(flow));
};

describe("run queue partitions", () => {
  test("flows spread evenly over the partitions", () => {
    const counts = new Array(16).fill(0);
    for (const partition of placements(16)) counts[partition]++;
    for (const count of counts) {
      expect(count).toBeGreaterThan((flows.length / 16) * 0.85);
      expect(count).toBeLessThan((flows.length / 16) * 1.15);
    }
  });

  test("one more partition moves only the flows it takes, about 1/(n + 1) of them", () => {
    const before = placements(16);
    const after = placements(17);
    const moved = before.filter((partition, i) => partition !== after[i]);
    expect(moved.length).toBeGreaterThan(flows.length / 17 / 1.3);
    expect(moved.length).toBeLessThan((flows.length / 17) * 1.3);
    // Each flow that moved went to the new partition: none moved between the old ones.
    for (const [i, partition] of after.entries()) if (partition !== before[i]) expect(partition).toBe(16);
  });

  test("one partition takes every flow, and jumpHash gives the reference implementation's buckets", () => {
    expect(new Set(placements(1))).toEqual(new Set([0]));
    // From Lamping and Veach's C++ (computed apart from this code): a rewrite cannot move flows silently.
    const keys = [0, 1, 2, 0xffffffff, 123456789];
    expect(keys.map((key) => jumpHash(key, 1000))).toEqual([0, 549, 338, 875, 294]);
    expect(keys.map((key) => jumpHash(key, 16))).toEqual([0, 6, 15, 5, 7]);
  });
});

import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "./connection.ts";

describe("a PGlite data directory", () => {
  test("is opened by one process at a time, and free again once closed or its owner died", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "pglite-lock-"));
    try {
      const other = Bun.spawn(["sleep", "30"]);
      writeFileSync(join(dataDir, "platform.lock"), String(other.pid));
      await expect(openDatabase({ kind: "pglite", dataDir })).rejects.toThrow(
        `data directory ${dataDir} is in use by process ${other.pid}`,
      );
      other.kill();
      await other.exited;

      const first = await openDatabase({ kind: "pglite", dataDir });
      await first.close();
      const again = await openDatabase({ kind: "pglite", dataDir });
      await again.ping();
      await again.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

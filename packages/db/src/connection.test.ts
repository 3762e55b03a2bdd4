import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
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

describe("notifications on PGlite", () => {
  test("each listener hears a NOTIFY once, whether a statement or a transaction commits it, until it stops", async () => {
    const handle = await openDatabase({ kind: "pglite" });
    try {
      const first: string[] = [];
      const second: string[] = [];
      const stopFirst = await handle.listen("orders", (payload) => first.push(payload));
      const stopSecond = await handle.listen("orders", (payload) => second.push(payload));
      await handle.notify("orders", "by a statement");
      // COMMIT is PGlite's own statement: its answer, with the notification, is read by PGlite.
      await handle.db.transaction().execute(async (trx) => {
        await sql`select pg_notify('orders', 'by a transaction')`.execute(trx);
      });
      await handle.notify("other_channel", "not listened to");
      await Bun.sleep(20);
      expect(first).toEqual(["by a statement", "by a transaction"]);
      expect(second).toEqual(["by a statement", "by a transaction"]);

      await stopFirst();
      await handle.notify("orders", "after the first stopped");
      await stopSecond();
      await handle.notify("orders", "after both stopped");
      await Bun.sleep(20);
      expect(first).toEqual(["by a statement", "by a transaction"]);
      expect(second).toEqual(["by a statement", "by a transaction", "after the first stopped"]);
      const { rows } = await sql<{ channel: string }>`select pg_listening_channels() as channel`.execute(handle.db);
      expect(rows).toEqual([]);
    } finally {
      await handle.close();
    }
  });
});

import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { namespaced } from "./namespace.ts";
import { brokerBackends } from "./test-backends.ts";

for (const backend of brokerBackends()) {
  describe.skipIf(Boolean(backend.skip))(
    `broker namespaces on ${backend.name}${backend.skip ? ` (skipped: ${backend.skip})` : ""}`,
    () => {
      test("two namespaces over one backend never see each other's entries, keys, limits or messages", async () => {
        const opened = await backend.open();
        try {
          const blue = namespaced(opened.broker, `blue-${randomBytes(4).toString("hex")}`);
          const green = namespaced(opened.broker, `green-${randomBytes(4).toString("hex")}`);
          const scope = "platform";

          await blue.append(scope, "events", "from blue");
          expect(await blue.length(scope, "events")).toBe(1);
          expect(await green.length(scope, "events")).toBe(0);

          await blue.kvPut(scope, "bucket", "key", "blue value");
          expect((await blue.kvGet(scope, "bucket", "key"))?.value).toBe("blue value");
          expect(await green.kvGet(scope, "bucket", "key")).toBeNull();

          expect((await blue.allow(scope, "login:ip:127.0.0.1", 1, 60)).allowed).toBe(true);
          expect((await blue.allow(scope, "login:ip:127.0.0.1", 1, 60)).allowed).toBe(false);
          expect((await green.allow(scope, "login:ip:127.0.0.1", 1, 60)).allowed).toBe(true);

          const heardByGreen: string[] = [];
          const heardByBlue: string[] = [];
          const stopGreen = await green.subscribe(scope, "done", (m) => heardByGreen.push(m));
          const stopBlue = await blue.subscribe(scope, "done", (m) => heardByBlue.push(m));
          await blue.publish(scope, "done", "run-1");
          for (let i = 0; i < 100 && heardByBlue.length === 0; i++) await Bun.sleep(10);
          expect(heardByBlue).toEqual(["run-1"]);
          expect(heardByGreen).toEqual([]);
          await stopGreen();
          await stopBlue();

          await blue.ping();
          expect(blue.kind).toBe(backend.kind);
        } finally {
          await opened.close();
        }
      });
    },
  );
}

import { describe, expect, test } from "bun:test";
import { pathAllowed } from "./path-patterns.ts";

describe("API key path patterns", () => {
  test("a literal pattern allows exactly its path", () => {
    expect(pathAllowed(["/secrets/db"], "/secrets/db")).toBe(true);
    expect(pathAllowed(["/secrets/db"], "/secrets/db2")).toBe(false);
    expect(pathAllowed(["/secrets/db"], "/secrets")).toBe(false);
  });

  test("a trailing * allows every path with that prefix", () => {
    expect(pathAllowed(["/storage/*"], "/storage/kv/orders")).toBe(true);
    expect(pathAllowed(["/storage/*"], "/storage")).toBe(false);
    expect(pathAllowed(["/storage*"], "/storage")).toBe(true);
    expect(pathAllowed(["/storage/*"], "/secrets/x")).toBe(false);
  });

  test("/hub/agent paths need a pattern that names them", () => {
    expect(pathAllowed(["/*"], "/hub/agent/chat")).toBe(false);
    expect(pathAllowed(["/hub/*"], "/hub/agent")).toBe(false);
    expect(pathAllowed(["/hub/*"], "/hub/nodes")).toBe(true);
    expect(pathAllowed(["/hub/agent*"], "/hub/agent/chat")).toBe(true);
    expect(pathAllowed(["/hub/agent/*"], "/hub/agent/chat")).toBe(true);
    expect(pathAllowed(["/hub/agent*"], "/hub/agents")).toBe(true);
  });

  test("encoded or doubled characters do not slip past a restriction", () => {
    expect(pathAllowed(["/hub/*"], "/hub/%61gent/chat")).toBe(false);
    expect(pathAllowed(["/hub/*"], "/hub/AGENT")).toBe(false);
    expect(pathAllowed(["/storage/*"], "//storage/kv")).toBe(true);
    expect(pathAllowed(["/secrets/*"], "/secrets/%E0%A4%A")).toBe(false);
  });

  test("a trailing slash, which routing ignores, neither widens nor narrows a pattern", () => {
    expect(pathAllowed(["/storage/*"], "/storage/")).toBe(false);
    expect(pathAllowed(["/accounts/api-keys/*"], "/accounts/api-keys/")).toBe(false);
    expect(pathAllowed(["/accounts/api-keys/*"], "/accounts/api-keys/01ab/")).toBe(true);
    expect(pathAllowed(["/accounts/users"], "/accounts/users/")).toBe(true);
    expect(pathAllowed(["/*"], "/")).toBe(true);
  });
});

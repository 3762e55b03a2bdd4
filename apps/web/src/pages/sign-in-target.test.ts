import { describe, expect, test } from "bun:test";
import { CONSOLE_HOME, signInTarget } from "./sign-in-target.ts";

describe("signInTarget", () => {
  test("a page of the console is kept, with its query and fragment", () => {
    expect(signInTarget("/console/runs")).toBe("/console/runs");
    expect(signInTarget("/console/flows/0194e0d0-0000-7000-8000-000000000000/edit")).toBe(
      "/console/flows/0194e0d0-0000-7000-8000-000000000000/edit",
    );
    expect(signInTarget("/console/runs?status=failed#top")).toBe("/console/runs?status=failed#top");
    // Dot segments that stay within the console resolve to the page they name.
    expect(signInTarget("/console/flows/../runs")).toBe("/console/runs");
  });

  test("anything that leaves the console goes to the console's home", () => {
    for (const redirect of [
      undefined,
      "",
      42,
      "/console",
      "/gw/evil/x",
      "/console/../../gw/evil/x",
      "/console/../gw/evil/x",
      "/console/%2e%2e/gw/evil/x",
      "/console/.%2E/gw/evil/x",
      "/console/..%2fgw/evil/x",
      "/console/..%5Cgw/evil/x",
      "/console/..\\gw/evil/x",
      "/console\\..\\gw/evil/x",
      "//evil.example/console/flows",
      "/\\evil.example/console/flows",
      "https://evil.example/console/flows",
      "javascript:alert(1)//console/",
      "console/flows",
      "/webhooks/abc",
    ]) {
      expect({ redirect, target: signInTarget(redirect) }).toEqual({ redirect, target: CONSOLE_HOME });
    }
  });
});

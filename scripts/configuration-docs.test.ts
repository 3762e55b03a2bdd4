import { expect, test } from "bun:test";
import { configurationDocument } from "./configuration-docs.ts";

const root = new URL("../", import.meta.url).pathname;
const documented = (text: string) => [...text.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]).sort();

test("docs/configuration.md is what the settings' schemas say (bun run docs:config writes it)", async () => {
  expect(await Bun.file(`${root}docs/configuration.md`).text()).toBe(configurationDocument());
});

test(".env.example names exactly the variables the processes and compose read", async () => {
  const example = await Bun.file(`${root}.env.example`).text();
  const named = [...example.matchAll(/^#? ?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]).sort();
  expect(named).toEqual(documented(configurationDocument()));
});

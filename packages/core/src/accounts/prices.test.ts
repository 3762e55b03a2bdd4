import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_PRICES, loadPrices } from "./prices.ts";

const dir = mkdtempSync(join(tmpdir(), "prices-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("price catalog", () => {
  test("without a file the defaults offer free, pro monthly and yearly, and team", async () => {
    const prices = await loadPrices(undefined);
    expect(prices).toBe(DEFAULT_PRICES);
    expect(prices.map((price) => price.lookup_key)).toEqual(["free", "pro_monthly", "pro_yearly", "team_monthly"]);
  });

  test("a file replaces the defaults", async () => {
    const file = join(dir, "prices.json");
    const custom = [
      {
        id: "price_x",
        currency: "eur",
        unit_amount: 500,
        amount: 500,
        lookup_key: "x",
        nickname: "X",
        metadata: { plan: "x" },
      },
    ];
    writeFileSync(file, JSON.stringify(custom));
    expect(await loadPrices(file)).toEqual(custom);
  });

  test("a missing or misshapen file stops start-up with a message naming it", async () => {
    await expect(loadPrices(join(dir, "absent.json"))).rejects.toThrow("absent.json cannot be read");
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify([{ id: "p", currency: "usd", unit_amount: 1.5 }]));
    await expect(loadPrices(bad)).rejects.toThrow(/bad\.json is not a list of prices: 0\.unit_amount/);
  });
});

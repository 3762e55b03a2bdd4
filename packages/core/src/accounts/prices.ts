import { readFile } from "node:fs/promises";
import { z } from "zod";
import { type Price, price } from "./schemas.ts";

/** The catalog served when no PRICES_FILE is configured. Amounts are in cents. */
export const DEFAULT_PRICES: Price[] = [
  {
    id: "price_free",
    currency: "usd",
    unit_amount: 0,
    amount: 0,
    lookup_key: "free",
    nickname: "Free",
    metadata: { plan: "free", interval: "month" },
  },
  {
    id: "price_pro_monthly",
    currency: "usd",
    unit_amount: 2900,
    amount: 2900,
    lookup_key: "pro_monthly",
    nickname: "Pro (monthly)",
    metadata: { plan: "pro", interval: "month" },
  },
  {
    id: "price_pro_yearly",
    currency: "usd",
    unit_amount: 29000,
    amount: 29000,
    lookup_key: "pro_yearly",
    nickname: "Pro (yearly)",
    metadata: { plan: "pro", interval: "year" },
  },
  {
    id: "price_team_monthly",
    currency: "usd",
    unit_amount: 9900,
    amount: 9900,
    lookup_key: "team_monthly",
    nickname: "Team (monthly)",
    metadata: { plan: "team", interval: "month" },
  },
];

const catalog = z.array(price.strict()).min(1);

/**
 * The price catalog: a JSON array of Price objects read from `file`, or the defaults.
 * A file that is missing or does not match the Price shape stops start-up.
 */
export async function loadPrices(file: string | undefined): Promise<Price[]> {
  if (!file) return DEFAULT_PRICES;
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    throw new Error(`PRICES_FILE ${file} cannot be read as JSON: ${(error as Error).message}`);
  }
  const result = catalog.safeParse(parsed);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join(".") || "file"}: ${issue.message}`);
    throw new Error(`PRICES_FILE ${file} is not a list of prices: ${problems.join("; ")}`);
  }
  return result.data;
}

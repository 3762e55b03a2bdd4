import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import type { Broker } from "../broker/port.ts";
import type { AuthConfig, CoreConfig } from "../config.ts";
import type { Sealer } from "../sealing.ts";
import { type AccessTokens, createAccessTokens } from "./access-tokens.ts";
import type { AuthCache } from "./auth-cache.ts";
import { loadPrices } from "./prices.ts";
import type { Price } from "./schemas.ts";
import { loadSigningKeys } from "./signing-keys.ts";

/** What the accounts services work with, built once per process. */
export interface AccountsDeps {
  db: Kysely<Database>;
  broker: Broker;
  config: AuthConfig;
  accessTokens: AccessTokens;
  prices: Price[];
  /** Seals TOTP secrets at rest. */
  sealer: Sealer;
  /** Verified credentials of this process; every revocation goes through it. */
  authCache: AuthCache;
}

/** Loads the signing keys and the price catalog; throws (refusing to start) when either is unusable. */
export async function createAccountsDeps(
  config: CoreConfig,
  db: Kysely<Database>,
  broker: Broker,
  sealer: Sealer,
  authCache: AuthCache,
): Promise<AccountsDeps> {
  const keys = await loadSigningKeys(config.auth.signingKeys, config.dataDir);
  return {
    db,
    broker,
    config: config.auth,
    accessTokens: createAccessTokens(keys, config.auth.accessTokenTtlSeconds),
    prices: await loadPrices(config.auth.pricesFile),
    sealer,
    authCache,
  };
}

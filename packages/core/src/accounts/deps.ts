import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import type { Broker } from "../broker/port.ts";
import type { AuthConfig, CoreConfig } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { Sealer } from "../sealing.ts";
import { type AccessTokens, createAccessTokens } from "./access-tokens.ts";
import type { AuthCache } from "./auth-cache.ts";
import { createMailer, type Mailer } from "./mailer.ts";
import { loadPrices } from "./prices.ts";
import type { Price } from "./schemas.ts";
import { loadSigningKeys } from "./signing-keys.ts";
import { rememberVerifiedTokens } from "./verified-tokens.ts";

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
  /** Invitation and reset mails; undefined without SMTP_URL. */
  mailer?: Mailer;
  logger: Logger;
}

/** Loads the signing keys and the price catalog; throws (refusing to start) when either is unusable. */
export async function createAccountsDeps(
  config: CoreConfig,
  db: Kysely<Database>,
  broker: Broker,
  sealer: Sealer,
  authCache: AuthCache,
  logger: Logger,
): Promise<AccountsDeps> {
  const keys = await loadSigningKeys(config.auth.signingKeys, config.dataDir);
  return {
    db,
    broker,
    config: config.auth,
    accessTokens: rememberVerifiedTokens(createAccessTokens(keys, config.auth.accessTokenTtlSeconds)),
    prices: await loadPrices(config.auth.pricesFile),
    sealer,
    authCache,
    mailer: createMailer(config.auth.mail, logger),
    logger,
  };
}

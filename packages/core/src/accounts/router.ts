import { router } from "../trpc.ts";
import { apiKeysRouter } from "./routers/api-keys.ts";
import { invitationsRouter } from "./routers/invitations.ts";
import { passkeysRouter } from "./routers/passkeys.ts";
import { passwordRouter } from "./routers/password.ts";
import { pricesRouter } from "./routers/prices.ts";
import { settingsRouter } from "./routers/settings.ts";
import { signInProcedures } from "./routers/sign-in.ts";
import { totpRouter } from "./routers/totp.ts";
import { usageRouter } from "./routers/usage.ts";
import { usersRouter } from "./routers/users.ts";

/** `accounts.*`: each group of procedures, with its OpenAPI meta and schemas, lives in `routers/`. */
export const accountsRouter = router({
  ...signInProcedures,
  totp: totpRouter,
  passkeys: passkeysRouter,
  users: usersRouter,
  invitations: invitationsRouter,
  password: passwordRouter,
  apiKeys: apiKeysRouter,
  prices: pricesRouter,
  usage: usageRouter,
  settings: settingsRouter,
});

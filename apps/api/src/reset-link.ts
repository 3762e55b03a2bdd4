/**
 * `bun run accounts:reset-link EMAIL`: prints a single-use password reset link for the
 * user of EMAIL, for a deployment without SMTP (or a user whose mail does not arrive).
 * The link works like a mailed one: valid PASSWORD_RESET_TTL_SECONDS, it replaces any
 * earlier link, and using it ends every session of the user. Exits 1 when the email has
 * no user.
 *
 * Reads DATABASE_URL (or the PGlite files in DATA_DIR: stop the embedded server first),
 * APP_URL and PUBLIC_URL, as the API does.
 */
import { createResetLink, messageOf, openConfiguredDatabase } from "@platform/core";
import { commandConfig } from "./command-config.ts";

const email = process.argv[2]?.trim().toLowerCase();
if (!email) {
  console.error("usage: bun run accounts:reset-link EMAIL");
  process.exit(2);
}

const config = commandConfig();

try {
  const database = await openConfiguredDatabase(config);
  try {
    const link = await createResetLink({ db: database.db, config: config.auth }, email);
    if (link) {
      process.stdout.write(`${link.url}\n`);
      console.error(`valid once, until ${link.expires.toISOString()}`);
    } else {
      console.error(`no user has the email ${email}`);
      process.exitCode = 1;
    }
  } finally {
    await database.close();
  }
} catch (error) {
  console.error(`reset-link failed: ${messageOf(error)}`);
  process.exitCode = 1;
}

/**
 * `bun run secrets:reseal`: re-seals every sealed value (secrets, TOTP secrets) under the
 * first key of SECRETS_KEY, in batches; run it after adding a new key in front, before
 * removing the old one. Values already under the current key are skipped, so it is safe
 * to run again. Prints one JSON line per sealed column; exits 1 when some value opens
 * under no listed key (it is left as it was).
 *
 * Reads DATABASE_URL (or the PGlite files in DATA_DIR: stop the embedded server first)
 * and SECRETS_KEY (or the key generated into DATA_DIR), as the API does.
 */
import { createSealer, loadSecretsKeys, messageOf, openConfiguredDatabase, resealAll } from "@platform/core";
import { commandConfig } from "./command-config.ts";

const BATCH_SIZE = 500;

const config = commandConfig();

try {
  const sealer = createSealer(await loadSecretsKeys(config.secretsKey, config.dataDir));
  const database = await openConfiguredDatabase(config);
  try {
    const reports = await resealAll(database.db, sealer, { batchSize: BATCH_SIZE });
    for (const report of reports) process.stdout.write(`${JSON.stringify(report)}\n`);
    const unreadable = reports.reduce((sum, report) => sum + report.unreadable, 0);
    if (unreadable > 0) {
      console.error(
        `${unreadable} sealed value(s) open under no key SECRETS_KEY lists; they were left as they are. List the key that sealed them and run again.`,
      );
      process.exitCode = 1;
    }
  } finally {
    await database.close();
  }
} catch (error) {
  console.error(`reseal failed: ${messageOf(error)}`);
  process.exitCode = 1;
}

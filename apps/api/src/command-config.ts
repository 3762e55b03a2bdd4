import { type CoreConfig, coreConfigSchema, messageOf, parseEnv, toCoreConfig } from "@platform/core";

/**
 * The configuration an operator's command (`secrets:reseal`, `accounts:reset-link`) reads
 * from the environment, as the API does; a setting it refuses ends the command with
 * exit code 2 and the reason.
 */
export function commandConfig(): CoreConfig {
  try {
    return toCoreConfig(parseEnv(coreConfigSchema, process.env));
  } catch (error) {
    console.error(messageOf(error));
    process.exit(2);
  }
}

import { type LoadResult, load, report } from "./load.ts";
import { availableModes, type RunningPlatform, startBaseline, startPlatform } from "./platform.ts";

/**
 * Runs `measure` on the platform started in every mode this machine can run, and prints
 * its rows beside the trivial Bun.serve loaded the same way right after.
 */
export async function reportEveryMode(
  settings: { connections: number; seconds: number },
  measure: (platform: RunningPlatform) => Promise<[string, LoadResult][]>,
): Promise<void> {
  const { connections, seconds } = settings;
  const baseline = await startBaseline();
  try {
    for (const mode of availableModes()) {
      const platform = await startPlatform(mode);
      try {
        const rows = await measure(platform);
        const trivial = await load({ url: baseline.url, connections, durationSeconds: seconds });
        report(`${mode} mode, ${connections} connections, ${seconds} s each`, trivial, rows);
      } finally {
        await platform.stop();
      }
    }
  } finally {
    await baseline.stop();
  }
}

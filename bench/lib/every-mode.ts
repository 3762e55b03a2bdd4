import { type LoadResult, load, report } from "./load.ts";
import { availableModes, type Mode, type RunningPlatform, startBaseline, startPlatform } from "./platform.ts";

/**
 * Starts the trivial Bun.serve that benchmarks compare against, then the platform in each of
 * `modes` in turn (each stopped before the next starts), and hands both to `measure`.
 */
export async function inEveryMode(
  modes: Mode[],
  measure: (platform: RunningPlatform, baselineUrl: string) => Promise<void>,
): Promise<void> {
  const baseline = await startBaseline();
  try {
    for (const mode of modes) {
      const platform = await startPlatform(mode);
      try {
        await measure(platform, baseline.url);
      } finally {
        await platform.stop();
      }
    }
  } finally {
    await baseline.stop();
  }
}

/**
 * Runs `measure` on the platform started in every mode this machine can run, and prints
 * its rows beside the trivial Bun.serve loaded the same way right after.
 */
export function reportEveryMode(
  settings: { connections: number; seconds: number },
  measure: (platform: RunningPlatform) => Promise<[string, LoadResult][]>,
): Promise<void> {
  const { connections, seconds } = settings;
  return inEveryMode(availableModes(), async (platform, baselineUrl) => {
    const rows = await measure(platform);
    const trivial = await load({ url: baselineUrl, connections, durationSeconds: seconds });
    report(`${platform.mode} mode, ${connections} connections, ${seconds} s each`, trivial, rows);
  });
}

import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { buildConsole } from "./build-console.ts";

/**
 * `bun run build:web`: the console into apps/web/dist (or the directory given), with its
 * sizes. With `--if-stale` (what the start scripts pass) it does nothing when the build is
 * newer than every source file, so a start after the first (or in the container image, built
 * when the image was) costs nothing.
 */
const args = process.argv.slice(2);
const ifStale = args.includes("--if-stale");
const outdir = args.find((arg) => !arg.startsWith("--")) ?? join(import.meta.dir, "../dist");
const sources = join(import.meta.dir, "../src");

async function newestSource(dir: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? await newestSource(path) : (await stat(path)).mtimeMs);
  }
  return newest;
}

const built = await stat(join(outdir, "index.html")).then(
  (file) => file.mtimeMs,
  () => 0,
);
if (ifStale && built > (await newestSource(sources))) process.exit(0);

const { files } = await buildConsole(outdir);
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
for (const file of files) {
  console.warn(`${file.path.slice(outdir.length + 1)}  ${kib(file.bytes)}, ${kib(file.brotli)} as sent (Brotli)`);
}

import { join } from "node:path";
import { buildConsole } from "./build-console.ts";

/** `bun run build:web`: the console into apps/web/dist (or the directory given), with its sizes. */
const outdir = process.argv[2] ?? join(import.meta.dir, "../dist");
const { files } = await buildConsole(outdir);
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
for (const file of files) {
  console.warn(`${file.path.slice(outdir.length + 1)}  ${kib(file.bytes)}, ${kib(file.brotli)} as sent (Brotli)`);
}

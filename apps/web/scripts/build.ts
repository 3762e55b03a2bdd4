import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { buildConsole } from "./build-console.ts";

/** `bun run build:web`: the console into apps/web/dist (or the directory given), with its sizes. */
const outdir = process.argv[2] ?? join(import.meta.dir, "../dist");
const { files } = await buildConsole(outdir);
for (const file of files) {
  const gzipped = gzipSync(await Bun.file(file.path).arrayBuffer()).length;
  console.warn(
    `${file.path.slice(outdir.length + 1)}  ${(file.bytes / 1024).toFixed(1)} KiB, ${(gzipped / 1024).toFixed(1)} KiB gzipped`,
  );
}

import { rm } from "node:fs/promises";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const root = join(import.meta.dir, "..");

/**
 * Builds the console into `outdir`: `index.html` and `assets/<name>-<hash>.<ext>` (served
 * under `/console/assets/`, cached for good since a name never changes meaning), each asset
 * beside its Brotli (`.br`) and gzip (`.gz`) forms, compressed once here rather than per request.
 */
export async function buildConsole(
  outdir: string,
): Promise<{ files: { path: string; bytes: number; brotli: number }[] }> {
  await rm(outdir, { recursive: true, force: true });
  const result = await Bun.build({
    entrypoints: [join(root, "src/index.html")],
    outdir,
    target: "browser",
    minify: true,
    // Pages with heavy parts of their own (Metrics' charts) become chunks loaded when opened.
    splitting: true,
    sourcemap: "none",
    publicPath: "/console/",
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    naming: { entry: "[name].[ext]", chunk: "assets/[name]-[hash].[ext]", asset: "assets/[name]-[hash].[ext]" },
  });
  if (!result.success) throw new AggregateError(result.logs, "the console did not build");
  const files = [];
  for (const output of result.outputs) {
    const bytes = new Uint8Array(await Bun.file(output.path).arrayBuffer());
    let brotli = bytes.length;
    if (output.path.includes("/assets/")) {
      const br = brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
      await Bun.write(`${output.path}.br`, br);
      await Bun.write(`${output.path}.gz`, gzipSync(bytes, { level: 9 }));
      brotli = br.length;
    }
    files.push({ path: output.path, bytes: bytes.length, brotli });
  }
  return { files };
}

import { rm } from "node:fs/promises";
import { join } from "node:path";

const root = join(import.meta.dir, "..");

/**
 * Builds the console into `outdir`: `index.html` and `assets/<name>-<hash>.<ext>` (served
 * under `/console/assets/`, cached for good since a name never changes meaning).
 */
export async function buildConsole(outdir: string): Promise<{ files: { path: string; bytes: number }[] }> {
  await rm(outdir, { recursive: true, force: true });
  const result = await Bun.build({
    entrypoints: [join(root, "src/index.html")],
    outdir,
    target: "browser",
    minify: true,
    sourcemap: "none",
    publicPath: "/console/",
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    naming: { entry: "[name].[ext]", chunk: "assets/[name]-[hash].[ext]", asset: "assets/[name]-[hash].[ext]" },
  });
  if (!result.success) throw new AggregateError(result.logs, "the console did not build");
  return { files: result.outputs.map((output) => ({ path: output.path, bytes: output.size })) };
}

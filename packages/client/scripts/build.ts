import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import ts from "typescript";
import { standaloneRouterDeclaration } from "./router-types.ts";

/**
 * Builds what `npm pack` ships: `dist/index.js` (one ESM file; @trpc/client and
 * @trpc/server stay imports, the server's enums are copied in) and the declarations, in
 * which `app-router.d.ts` is the router's type spelled out rather than a reference to the
 * server's code.
 */
const root = join(import.meta.dir, "..");
const dist = join(root, "dist");
await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });

/** The server's one module the package carries: its enums, which import nothing. */
const ENUMS = "@platform/core/enums";
const bundle = await Bun.build({
  entrypoints: [join(root, "src/index.ts")],
  outdir: dist,
  format: "esm",
  target: "browser",
  packages: "external",
  plugins: [
    {
      name: "inline the server's enums",
      setup(build) {
        build.onResolve({ filter: /^@platform\/core\/enums$/ }, () => ({ path: Bun.resolveSync(ENUMS, root) }));
      },
    },
  ],
});
if (!bundle.success) throw new AggregateError(bundle.logs, "bundling failed");

const entry = join(root, "src/index.ts");
// The workspace's compiler settings (the server's code is read to know the router's type),
// emitting declarations only.
const config = ts.getParsedCommandLineOfConfigFile(
  join(root, "tsconfig.json"),
  {},
  {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
    },
  },
);
if (!config) throw new Error("cannot read tsconfig.json");
const program = ts.createProgram([entry], {
  ...config.options,
  noEmit: false,
  declaration: true,
  emitDeclarationOnly: true,
  rewriteRelativeImportExtensions: true,
  rootDir: join(root, "src"),
  outDir: dist,
});
// Only the client's own files are checked here (the workspace's type check covers the rest).
const problems = program
  .getSourceFiles()
  .filter((file) => file.fileName.startsWith(join(root, "src")))
  .flatMap((file) => ts.getPreEmitDiagnostics(program, file));
if (problems.length > 0) {
  const host = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => root, getNewLine: () => "\n" };
  throw new Error(ts.formatDiagnostics(problems, host));
}
const routerFile = join(root, "src/app-router.ts");
const written: string[] = [];
const result = program.emit(undefined, (file, text) => {
  // The workspace's app-router re-exports the server's type; the package gets it spelled out.
  const content = file.endsWith("app-router.d.ts")
    ? standaloneRouterDeclaration(program, routerFile)
    : text.replace(/(from "\.{1,2}\/[^"]+)\.ts"/g, '$1.js"');
  Bun.write(file, content);
  written.push(file);
});
if (result.emitSkipped) throw new Error("declaration emit failed");
// On stderr: `npm pack --json` prints its report on stdout.
console.error(
  `built ${[...bundle.outputs.map((o) => o.path), ...written].map((f) => f.slice(root.length + 1)).join(", ")}`,
);

/**
 * The dependency check `bun run lint` runs after Biome (dependency-cruiser, over apps/, packages/,
 * bench/ and scripts/): no import circle anywhere, and the layers CONTRIBUTING.md draws,
 *
 *   apps/* → packages/core → packages/db       apps/web → @platform/client → (types of) packages/core
 *
 * An arrow is "may import". Repository tooling (tests, bench/, scripts/) sits above all of it: a
 * test or a bench may start or read any app and any package, as the HTTP tests must (a real
 * server on a real port); deployable code may not.
 *
 * Type-only imports (`import type`) count, for cycles and layers alike. They vanish at run time, so
 * a circle made only of them cannot leave a module half-initialised; but a circle of types is still
 * two modules that cannot be understood, moved or tested one without the other (the circle issue 30
 * found ran through `context.ts` → `services.ts` and was type-only at its joints), and a circle that is
 * type-only today becomes a run-time one with the first value imported along it. Leaf modules of
 * types (`caller.ts`, an area's `deps.ts`) keep that possible without exceptions.
 *
 * Run it alone: `bun --bun depcruise --config .dependency-cruiser.cjs apps packages bench scripts`
 * (`--bun`: the tool needs Node 22 or later; Bun runs it whatever Node is installed).
 */

/** Files only tests and tooling load: they may reach across the layers to start what they test. */
const TEST_FILES = "(^|/)test/|\\.test\\.tsx?$|^packages/[^/]+/src/testing\\.ts$|^bench/|^scripts/";

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment:
        "No import circle, type-only imports included (see the header). Break one by moving what both sides need into a leaf module (caller.ts, members.ts) or by importing an entry point from its own module instead of a barrel.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "barrels-reach-no-services",
      comment:
        "An area's index.ts (a barrel) re-exports types and pure helpers, never an entry point that takes Services: importing a barrel for a type must not pull in services.ts, which imports every area (the circle of issue 30 ran through flows/index.ts and webhooks/index.ts). Export such entry points from packages/core/src/index.ts, straight from their modules.",
      severity: "error",
      from: { path: "^packages/core/src/.+/index\\.ts$" },
      to: { path: "^packages/core/src/services\\.ts$", reachable: true },
    },
    {
      name: "packages-import-no-app",
      comment: "Packages are below the apps: no package imports an app (its tests may start one).",
      severity: "error",
      from: { path: "^packages/", pathNot: TEST_FILES },
      to: { path: "^apps/" },
    },
    {
      name: "apps-import-no-other-app",
      comment:
        "An app imports its own files and the packages, never another app: what two apps share belongs in a package (a tool that reads several apps, like the configuration reference, lives in scripts/).",
      severity: "error",
      from: { path: "^apps/([^/]+)/", pathNot: TEST_FILES },
      to: { path: "^apps/", pathNot: "^apps/$1/" },
    },
    {
      name: "web-only-through-the-client",
      comment:
        "The console (apps/web) talks to the platform only through @platform/client, the typed API; it imports its own files, that client and libraries, never core or db (its tests may, to start a server).",
      severity: "error",
      from: { path: "^apps/web/", pathNot: TEST_FILES },
      to: { path: "^packages/", pathNot: "^packages/client/" },
    },
    {
      name: "client-carries-no-server-code",
      comment:
        "@platform/client is packed and shipped to browsers: of core it takes the router's types (import type) and the word lists of core's enums.ts (a module that imports nothing), no other code.",
      severity: "error",
      from: { path: "^packages/client/", pathNot: TEST_FILES },
      to: {
        path: "^packages/(core|db)/",
        pathNot: "^packages/core/src/enums\\.ts$",
        dependencyTypesNot: ["type-only"],
      },
    },
    {
      name: "core-imports-no-client",
      comment: "Core is below the client: the client is generated from core's router, never the other way round.",
      severity: "error",
      from: { path: "^packages/core/" },
      to: { path: "^packages/client/" },
    },
    {
      name: "db-imports-no-core",
      comment:
        "packages/db is the bottom layer (the Database type, migrations, the dialects): it imports no other package, and a migration never imports application code.",
      severity: "error",
      from: { path: "^packages/db/", pathNot: TEST_FILES },
      to: { path: "^packages/(core|client)/" },
    },
    {
      name: "not-to-unresolvable",
      comment:
        "Every import resolves: one the check cannot follow is one it cannot judge (a workspace package that exports built files needs a `paths` entry, as apps/web's tsconfig has for @platform/client).",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)node_modules/|(^|/)dist/|^apps/web/build/out/|/test/fixtures/" },
    // Count `import type` and type-only re-exports (see the header).
    tsPreCompilationDeps: true,
    // apps/web's tsconfig is the root one plus the `paths` entry that maps @platform/client to its
    // source (the package's own exports name the built dist/); nothing else imports the client.
    tsConfig: { fileName: "apps/web/tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".tsx", ".js", ".mjs", ".cjs", ".json"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};

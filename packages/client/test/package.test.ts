import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, readdir, readFile, realpath, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { signUp } from "../../../apps/api/test/accounts-helpers.ts";
import { startTestApi } from "../../../apps/api/test/harness.ts";

/**
 * What `npm pack` makes of this package, used as a stranger would: unpacked into a project
 * of its own that has nothing but the package, @trpc/client and @trpc/server, then type
 * checked (strictly, library types included) and run in Node.
 */
const packageDir = join(import.meta.dir, "..");
const repoRoot = join(packageDir, "../..");
const tsc = join(repoRoot, "node_modules/.bin/tsc");
const node = Bun.which("node");

async function run(command: string[], cwd: string) {
  const child = Bun.spawn(command, { cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { code, stdout, stderr, output: stdout + stderr };
}

const CONSUMER_TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "ESNext",
    moduleResolution: "Bundler",
    // @trpc/server's own declarations use `Disposable`.
    lib: ["ES2022", "ESNext.Disposable", "DOM"],
    types: [],
    strict: true,
    skipLibCheck: false,
    noEmit: true,
  },
};

/** Uses procedures of several areas as their types allow. */
const GOOD_USE = `
import {
  createPlatformClient,
  isFinalRunStatus,
  PlatformError,
  type PlatformTokens,
  RUN_STATUSES,
  type RouterInputs,
  type RouterOutputs,
  type RunStatus,
} from "@platform/client";

const client = createPlatformClient({
  url: "http://localhost:3000",
  email: "ada@example.com",
  password: "correct horse battery",
  onTokens: (tokens: PlatformTokens) => void tokens.refreshToken,
});
export async function use(): Promise<string> {
  await client.secrets.put.mutate({ key: "stripe-key", value: "sk_live_1" });
  const secret: { key: string; value: string } = await client.secrets.get.query({ key: "stripe-key" });
  const revision: number = (await client.storage.kv.keys.put.mutate({ bucket: "b", key: "k", value: { any: "json" } })).revision;
  const seq: number | undefined = (await client.storage.streams.list.query({ name: "orders" })).data[0]?.seq;
  const keys = createPlatformClient({ url: "http://localhost:3000", apiKey: "wfk_..." });
  const created: string = (await keys.accounts.apiKeys.create.mutate({ name: "ci" })).data.key;
  // A procedure's input and output by its path, and the run statuses they use.
  const put: RouterInputs["secrets"]["put"] = { key: "k", value: "v" };
  const status: RunStatus = (await client.runs.get.query({ id: "0194e0d0-0000-7000-8000-000000000001" })).status;
  const listed: RouterOutputs["runs"]["listAll"]["data"][number]["status"][] = [...RUN_STATUSES];
  if (!isFinalRunStatus(status) && listed.includes(status)) await client.secrets.put.mutate(put);
  try {
    await client.secrets.get.query({ key: "missing" });
  } catch (error) {
    if (error instanceof PlatformError) return \`\${error.status} \${error.message} \${error.requestId ?? ""}\`;
  }
  return secret.value + revision + seq + created;
}
`;

/** Each line misuses a procedure; each must be refused. */
const MISUSES = {
  "value-number.ts": `await client.secrets.put.mutate({ key: "k", value: 42 });`,
  "missing-field.ts": `await client.secrets.put.mutate({ key: "k" });`,
  "no-such-procedure.ts": `await client.secrets.rename.mutate({ key: "k", to: "j" });`,
  "query-a-mutation.ts": `await client.secrets.put.query({ key: "k", value: "v" });`,
  "wrong-output.ts": `const value: number = (await client.secrets.get.query({ key: "k" })).value; void value;`,
  "no-such-status.ts": `const s: import("@platform/client").RunStatus = "finished"; void s;`,
};

describe("the packed package", () => {
  let work: string;
  let consumer: string;
  let files: string[];

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "platform-client-"));
    // npm pack runs the prepack script: the build.
    const packed = await run(["npm", "pack", "--json", "--pack-destination", work], packageDir);
    expect(packed.code).toBe(0);
    const [report] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as {
      filename: string;
      files: { path: string }[];
    }[];
    if (!report) throw new Error(`npm pack reported nothing: ${packed.output}`);
    files = report.files.map((file) => file.path).sort();

    consumer = join(work, "consumer");
    const modules = join(consumer, "node_modules");
    await mkdir(join(modules, "@platform"), { recursive: true });
    await mkdir(join(modules, "@trpc"), { recursive: true });
    expect((await run(["tar", "-xzf", join(work, report.filename), "-C", work], work)).code).toBe(0);
    await rename(join(work, "package"), join(modules, "@platform/client"));
    for (const name of ["client", "server"]) {
      await symlink(await realpath(join(packageDir, "node_modules/@trpc", name)), join(modules, "@trpc", name));
    }
    await writeFile(
      join(consumer, "package.json"),
      JSON.stringify({ name: "consumer", type: "module", private: true }),
    );
  }, 300_000);
  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  test("holds ESM, declarations and the README, and nothing of the server", async () => {
    expect(files).toEqual([
      "README.md",
      "dist/app-router.d.ts",
      "dist/enums.d.ts",
      "dist/errors.d.ts",
      "dist/index.d.ts",
      "dist/index.js",
      "dist/router-io.d.ts",
      "dist/session.d.ts",
      "package.json",
    ]);
    const installed = join(consumer, "node_modules/@platform/client");
    const manifest = JSON.parse(await readFile(join(installed, "package.json"), "utf8"));
    expect(manifest.type).toBe("module");
    expect(manifest.exports).toEqual({ ".": { types: "./dist/index.d.ts", import: "./dist/index.js" } });
    // The versions the server runs (the workspace catalog), and nothing else at run time.
    const catalog = JSON.parse(await readFile(join(repoRoot, "package.json"), "utf8")).workspaces.catalog;
    expect(manifest.dependencies).toEqual({
      "@trpc/client": catalog["@trpc/client"],
      "@trpc/server": catalog["@trpc/server"],
    });

    const imported = new Set<string>();
    for (const file of await readdir(join(installed, "dist"))) {
      const text = await readFile(join(installed, "dist", file), "utf8");
      for (const [, specifier] of text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) imported.add(specifier ?? "");
      expect(text).not.toContain("@platform/");
    }
    const external = [...imported].filter((specifier) => !specifier.startsWith("./")).sort();
    expect(external).toEqual(["@trpc/client", "@trpc/server", "@trpc/server/observable"]);
  });

  test("type checks a consumer's correct calls, and refuses each misuse of a procedure", async () => {
    // The README's example too, as written.
    const readme = await readFile(join(packageDir, "README.md"), "utf8");
    const example = readme.slice(readme.indexOf("```ts\n") + 6, readme.indexOf("```\n", readme.indexOf("```ts\n") + 6));
    await writeFile(
      join(consumer, "readme.ts"),
      `declare function save(refreshToken: string): void;\n${example}export {};\n`,
    );
    await writeFile(join(consumer, "good.ts"), GOOD_USE);
    await writeFile(
      join(consumer, "tsconfig.good.json"),
      JSON.stringify({ ...CONSUMER_TSCONFIG, files: ["good.ts", "readme.ts"] }),
    );
    for (const [file, misuse] of Object.entries(MISUSES)) {
      const source = `import { createPlatformClient } from "@platform/client";\nconst client = createPlatformClient({ url: "http://localhost:3000", apiKey: "k" });\n${misuse}\nexport {};\n`;
      await writeFile(join(consumer, file), source);
    }
    await writeFile(
      join(consumer, "tsconfig.bad.json"),
      JSON.stringify({ ...CONSUMER_TSCONFIG, files: Object.keys(MISUSES) }),
    );
    // Two projects, two compilers at once.
    const [good, bad] = await Promise.all([
      run([tsc, "-p", "tsconfig.good.json"], consumer),
      run([tsc, "-p", "tsconfig.bad.json"], consumer),
    ]);
    expect(good.output).toBe("");
    expect(good.code).toBe(0);
    expect(bad.code).not.toBe(0);
    // Each misuse is refused where it is written (line 3), none in the package's declarations.
    const refused = bad.output.split("\n").filter((line) => line.includes(": error TS"));
    expect(new Set(refused.map((line) => line.slice(0, line.indexOf("(3,"))))).toEqual(new Set(Object.keys(MISUSES)));
  }, 240_000); // tsc over a whole project: tens of seconds on a shared machine

  test.skipIf(!node)(
    `runs in Node ${node ? "" : "(skipped: node is not installed)"}against the real server`,
    async () => {
      const api = await startTestApi({ backend: "pglite" });
      try {
        const owner = await signUp(api, "client-node");
        const script = `
        import { createPlatformClient, PlatformError, RUN_STATUSES, isFinalRunStatus } from "@platform/client";
        const client = createPlatformClient({ url: process.argv[2], email: process.argv[3], password: process.argv[4] });
        await client.secrets.put.mutate({ key: "from-node", value: process.version });
        const secret = await client.secrets.get.query({ key: "from-node" });
        const missing = await client.secrets.get.query({ key: "missing" }).catch((error) => error);
        const statuses = RUN_STATUSES.filter((status) => !isFinalRunStatus(status));
        console.log(JSON.stringify({ secret, missing: [missing instanceof PlatformError, missing.status, missing.message], statuses }));
      `;
        await writeFile(join(consumer, "smoke.mjs"), script);
        const ran = await run([node ?? "node", "smoke.mjs", api.url, owner.email, owner.password], consumer);
        expect(ran.stderr).toBe("");
        const version = (await run([node ?? "node", "--version"], consumer)).stdout.trim();
        expect(JSON.parse(ran.stdout)).toEqual({
          secret: { key: "from-node", value: version },
          missing: [true, 404, "resource not found"],
          // The server's enums travel in the package as values.
          statuses: ["queued", "running"],
        });
      } finally {
        await api.stop();
      }
    },
    120_000,
  );
});

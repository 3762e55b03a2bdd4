// `bun run test`: every suite, in two `bun test` processes at once, each a shard of the test
// files (`--shard=i/N`) run one file after another as a lone `bun test` runs them; then, alone
// on the machine, the suites that measure time (SOLO). The suites spend most of their time
// waiting (on workers, timers, browsers, other processes), not computing: a lone run kept this
// 2-core machine's load near 1. Each run's output is printed whole once it ends, then the
// totals, in `bun test`'s own summary form (" N pass", " N fail", "Ran N tests across N
// files."), which CI reads. With arguments (`bun run test apps/api/test/runs.test.ts`), it is
// a plain `bun test` with them.

const TIMEOUT = ["--timeout", "30000"];
/** As many as this 2-core machine's CI has cores. */
const SHARDS = 2;
/** Suites that compare a tenant's latency alone and beside another's load: another suite's load would be theirs. */
const SOLO = ["apps/api/test/tenant-time.test.ts"];

const args = process.argv.slice(2);
if (args.length > 0) {
  const single = Bun.spawn(["bun", "test", ...TIMEOUT, ...args], { stdio: ["inherit", "inherit", "inherit"] });
  process.exit(await single.exited);
}

const started = performance.now();

/** The number `pattern` captures on its last match in `output` (a summary line such as " 12 pass"), or 0. */
function count(output: string, pattern: RegExp): number {
  const found = [...output.matchAll(pattern)].at(-1);
  return found ? Number(found[1]) : 0;
}

/** Runs `bun test` with `testArgs`, prints its output under `title` once it ends, and reads its summary. */
async function runTests(title: string, testArgs: string[]) {
  const child = Bun.spawn(["bun", "test", ...TIMEOUT, ...testArgs], {
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  const output = stdout + stderr;
  await Bun.write(Bun.stdout, `\n== ${title} (exit ${code})\n${output}`);
  const failed = count(output, /^ *(\d+) fail$/gm);
  return {
    code,
    passed: count(output, /^ *(\d+) pass$/gm),
    // A run that failed without a failed test (it crashed, or a hook failed outside a test) still counts one.
    failed: code !== 0 && failed === 0 ? 1 : failed,
    tests: count(output, /^Ran (\d+) tests? across/gm),
    files: count(output, /^Ran \d+ tests? across (\d+) files?/gm),
  };
}

const ignoreSolo = SOLO.map((file) => `--path-ignore-patterns=${file}`);
const results = await Promise.all(
  Array.from({ length: SHARDS }, (_, index) =>
    runTests(`shard ${index + 1}/${SHARDS}`, [`--shard=${index + 1}/${SHARDS}`, ...ignoreSolo]),
  ),
);
results.push(await runTests("alone: the suites that measure time", SOLO));

const sum = (field: "passed" | "failed" | "tests" | "files") => results.reduce((total, one) => total + one[field], 0);
const seconds = ((performance.now() - started) / 1000).toFixed(2);
await Bun.write(
  Bun.stdout,
  `\n== all suites\n ${sum("passed")} pass\n ${sum("failed")} fail\nRan ${sum("tests")} tests across ${sum("files")} files. [${seconds}s]\n`,
);
process.exitCode = results.some((one) => one.code !== 0) ? 1 : 0;

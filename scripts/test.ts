// `bun run test`: every suite, in two `bun test` processes at once, each
// a shard of the test files (`--shard=i/N`) run one file after another as a lone `bun test`
// runs them. The suites spend most of their time waiting (on workers, timers, browsers, other
// processes), not computing: a lone run kept this 2-core machine's load near 1. Each shard's
// output is printed whole once it ends, then the totals, in `bun test`'s own summary form
// (" N pass", " N fail", "Ran N tests across N files."), which CI reads. With arguments
// (`bun run test apps/api/test/runs.test.ts`), it is a plain `bun test` with them.

const TIMEOUT = ["--timeout", "30000"];
const args = process.argv.slice(2);

if (args.length > 0) {
  const single = Bun.spawn(["bun", "test", ...TIMEOUT, ...args], { stdio: ["inherit", "inherit", "inherit"] });
  process.exit(await single.exited);
}

/** As many as this 2-core machine's CI has cores. */
const shards = 2;
const started = performance.now();

/** The number `pattern` captures on its last match in `output` (a summary line such as " 12 pass"), or 0. */
function count(output: string, pattern: RegExp): number {
  const found = [...output.matchAll(pattern)].at(-1);
  return found ? Number(found[1]) : 0;
}

const results = await Promise.all(
  Array.from({ length: shards }, async (_, index) => {
    const shard = `${index + 1}/${shards}`;
    const child = Bun.spawn(["bun", "test", ...TIMEOUT, `--shard=${shard}`], {
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
    process.stdout.write(`\n== shard ${shard} (exit ${code})\n${output}`);
    return {
      code,
      passed: count(output, /^ *(\d+) pass$/gm),
      failed: count(output, /^ *(\d+) fail$/gm),
      tests: count(output, /^Ran (\d+) tests? across/gm),
      files: count(output, /^Ran \d+ tests? across (\d+) files?/gm),
    };
  }),
);

const sum = (field: "passed" | "failed" | "tests" | "files") => results.reduce((total, one) => total + one[field], 0);
// A shard that failed without reporting a failed test (it crashed, or a hook failed outside a test) still fails the run.
const unexplained = results.filter((one) => one.code !== 0 && one.failed === 0).length;
const seconds = ((performance.now() - started) / 1000).toFixed(2);
process.stdout.write(
  `\n== all ${shards} shards\n ${sum("passed")} pass\n ${sum("failed") + unexplained} fail\nRan ${sum("tests")} tests across ${sum("files")} files. [${seconds}s]\n`,
);
process.exit(results.some((one) => one.code !== 0) ? 1 : 0);

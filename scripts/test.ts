// `bun run test`: every suite, in two `bun test` processes at once, each a shard of the test
// files run one file after another as a lone `bun test` runs them; then, alone on the
// machine, the suites that measure time (SOLO). The shards are cut by how long each file took
// (test-seconds.json: longest first, each to the shard with the least so far), so both end
// together; a file not listed counts as the median. The suites spend most of their time
// waiting (on workers, timers, browsers, other processes), not computing: a lone run kept this
// 2-core machine's load near 1. Each run's output is printed whole once it ends, then the
// totals, in `bun test`'s own summary form (" N pass", " N fail", "Ran N tests across N
// files."), which CI reads. `bun run test --record-seconds` does the same and then writes each
// file's time to test-seconds.json. With other arguments (`bun run test
// apps/api/test/runs.test.ts`), it is a plain `bun test` with them.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const TIMEOUT = ["--timeout", "30000"];
/** As many as this 2-core machine's CI has cores. */
const SHARDS = 2;
/** Suites that compare a tenant's latency alone and beside another's load: another suite's load would be theirs. */
const SOLO = ["apps/api/test/tenant-time.test.ts"];

const SECONDS_FILE = join(import.meta.dir, "test-seconds.json");

const args = process.argv.slice(2);
const recordSeconds = args.length === 1 && args[0] === "--record-seconds";
if (args.length > 0 && !recordSeconds) {
  const single = Bun.spawn(["bun", "test", ...TIMEOUT, ...args], { stdio: ["inherit", "inherit", "inherit"] });
  process.exit(await single.exited);
}

/** Every test file `bun test` finds (its default names, outside node_modules), from the repository's root. */
async function testFiles(): Promise<string[]> {
  const files: string[] = [];
  for await (const file of new Bun.Glob("**/*{.test,_test_,.spec,_spec_}.{ts,tsx,js,jsx}").scan(".")) {
    if (!file.split("/").includes("node_modules")) files.push(file);
  }
  return files.sort();
}

/** `files` cut into `count` lists of about equal time: longest first, each to the list with the least so far. */
function cutByTime(files: string[], seconds: Record<string, number>, count: number): string[][] {
  const known = Object.values(seconds).sort((a, b) => a - b);
  const median = known[Math.floor(known.length / 2)] ?? 1;
  const timeOf = (file: string) => seconds[file] ?? median;
  const shards = Array.from({ length: count }, () => ({ files: [] as string[], seconds: 0 }));
  for (const file of [...files].sort((a, b) => timeOf(b) - timeOf(a))) {
    const least = shards.reduce((best, shard) => (shard.seconds < best.seconds ? shard : best));
    least.files.push(file);
    least.seconds += timeOf(file);
  }
  return shards.map((shard) => shard.files.sort());
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

/** Each file's time in a `bun test` JUnit report: the time of its top-level `testsuite`, hooks included. */
function secondsPerFile(report: string): Record<string, number> {
  const seconds: Record<string, number> = {};
  let depth = 0;
  for (const [, closing, attributes = ""] of report.matchAll(/<(\/?)testsuite\b([^>]*)>/g)) {
    if (closing) depth--;
    else {
      const name = /\bname="([^"]*)"/.exec(attributes)?.[1];
      const time = /\btime="([^"]*)"/.exec(attributes)?.[1];
      if (depth === 0 && name && time) seconds[name] = Math.round(Number(time) * 10) / 10;
      if (!attributes.endsWith("/")) depth++;
    }
  }
  return seconds;
}

const seconds: Record<string, number> = await Bun.file(SECONDS_FILE).json();
const sharded = (await testFiles()).filter((file) => !SOLO.includes(file));
const reports = recordSeconds ? mkdtempSync(join(tmpdir(), "test-reports-")) : "";
const reportOf = (index: number) => join(reports, `shard-${index + 1}.xml`);
const results = await Promise.all(
  cutByTime(sharded, seconds, SHARDS).map((files, index) =>
    runTests(`shard ${index + 1}/${SHARDS}`, [
      ...(recordSeconds ? ["--reporter=junit", `--reporter-outfile=${reportOf(index)}`] : []),
      ...files.map((file) => `./${file}`),
    ]),
  ),
);
results.push(await runTests("alone: the suites that measure time", SOLO));
if (recordSeconds) {
  // Only the files there are now: a deleted one's time goes.
  const recorded: Record<string, number> = Object.fromEntries(
    sharded.flatMap((file) => (seconds[file] === undefined ? [] : [[file, seconds[file]]])),
  );
  for (let index = 0; index < SHARDS; index++) {
    // A shard that crashed wrote no report: its files keep the times they had.
    const report = Bun.file(reportOf(index));
    Object.assign(recorded, (await report.exists()) ? secondsPerFile(await report.text()) : {});
  }
  const sorted = Object.fromEntries(Object.entries(recorded).sort(([a], [b]) => a.localeCompare(b)));
  await Bun.write(SECONDS_FILE, `${JSON.stringify(sorted, null, 2)}\n`);
}

const sum = (field: "passed" | "failed" | "tests" | "files") => results.reduce((total, one) => total + one[field], 0);
const took = ((performance.now() - started) / 1000).toFixed(2);
await Bun.write(
  Bun.stdout,
  `\n== all suites\n ${sum("passed")} pass\n ${sum("failed")} fail\nRan ${sum("tests")} tests across ${sum("files")} files. [${took}s]\n`,
);
process.exitCode = results.some((one) => one.code !== 0) ? 1 : 0;

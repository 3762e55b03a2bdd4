/**
 * How long one expression holds the event loop: each attack class of issue 29 (and the
 * built-ins whose cost grows with their input), evaluated by JSONata as it is and by the
 * platform's guarded evaluation, one after the other in the same process. A 0 ms timer ticks
 * throughout; the longest gap between its ticks (or the whole evaluation, when none came) is
 * the hold. Expressions that would run for minutes unguarded are measured guarded only.
 *
 *   bun bench/expressions.ts
 */
import jsonata from "../packages/core/node_modules/jsonata";
import { compileExpression } from "../packages/core/src/templates/expressions.ts";

const scope = {
  trigger: {
    s: "a".repeat(26),
    big: "a".repeat(1_000_000),
    arr: Array.from({ length: 100_000 }, (_, index) => index),
  },
};

let ticks: number[] = [];
const timer = setInterval(() => ticks.push(performance.now()), 0);

async function hold(expression: string, guarded: boolean): Promise<string> {
  await Bun.sleep(5);
  const started = performance.now();
  ticks = [started];
  let outcome = "ok";
  try {
    if (guarded) await compileExpression(expression).evaluate(scope);
    else await jsonata(expression).evaluate(scope);
  } catch (error) {
    outcome = (error as Error).message?.slice(0, 60) ?? String(error);
  }
  const ended = performance.now();
  ticks.push(ended);
  let longest = 0;
  for (const [index, tick] of ticks.entries()) longest = Math.max(longest, tick - (ticks[index - 1] ?? tick));
  return `${(ended - started).toFixed(1).padStart(8)} ms, held ${longest.toFixed(1).padStart(7)} ms  ${outcome}`;
}

const BOTH = [
  "$length($pad('', 3e7))",
  "$length(trigger.big)",
  "$substring(trigger.big, 10, 100)",
  "$string(trigger.arr)",
  "$distinct(trigger.arr)",
  "[1..100000]",
  "trigger.arr[$ > 5]",
  "$split(trigger.big, '')",
  "$sum(trigger.items.(price * qty)) > 10 ? 'big' : 'small'",
];
const GUARDED_ONLY = [
  "$contains(trigger.s, /(a|a?)+b/)",
  "$sort(trigger.arr)",
  "($loop := function($n) { $n > 1e9 ? $n : $loop($n + 1) }; $loop(0))",
  "$length($join([1..100000].$pad('', 100000)))",
];

for (const expression of BOTH) {
  console.log(`${expression}\n  jsonata ${await hold(expression, false)}\n  guarded ${await hold(expression, true)}`);
}
for (const expression of GUARDED_ONLY) console.log(`${expression}\n  guarded ${await hold(expression, true)}`);
clearInterval(timer);

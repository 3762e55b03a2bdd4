import jsonata from "jsonata";
import { compileExpression } from "./src/templates/expressions.ts";
const scope = { trigger: { big: "a".repeat(1_000_000), arr: Array.from({length: 100000}, (_, i) => i) } };
let ticks: number[] = [];
const iv = setInterval(() => ticks.push(performance.now()), 0);
async function attempt(e: string, raw = false) {
  await new Promise((r) => setTimeout(r, 5));
  const t = performance.now(); ticks = [t];
  try { raw ? await jsonata(e).evaluate(scope) : await compileExpression(e).evaluate(scope); } catch (err) { console.log("ERR", (err as Error).message.slice(0, 100)); }
  const end = performance.now(); ticks.push(end);
  let gap = 0; for (let i = 1; i < ticks.length; i++) gap = Math.max(gap, ticks[i] - ticks[i - 1]);
  console.log(raw ? "raw  " : "guard", e.slice(0, 60).padEnd(60), (end - t).toFixed(1).padStart(7), "ms; longest hold", gap.toFixed(1));
}
for (const e of ["$length(trigger.big)", "$pad('', 1000000)", "$uppercase(trigger.big)", "$substring(trigger.big, 10, 100)", "$string(trigger.arr)", "$distinct(trigger.arr)", "$sum(trigger.arr)", "[1..100000]", "$sort(trigger.arr)", "trigger.arr[$ > 5]", "$contains(trigger.big, 'b')", "$split(trigger.big, '')"]) { await attempt(e, true); await attempt(e); }
clearInterval(iv);

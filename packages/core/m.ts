import { compileExpression } from "./src/templates/expressions.ts";
const scope = { trigger: { s: "a".repeat(26), amount: 140, customer: "ada", items: [{ sku: "a", qty: 2, price: 10 }, { sku: "b", qty: 0, price: 5.5 }] } };
let maxGap = 0, last = performance.now();
const iv = setInterval(() => { const n = performance.now(); maxGap = Math.max(maxGap, n - last); last = n; }, 1);
async function attempt(e: string) {
  const t = performance.now(); maxGap = 0; last = performance.now();
  try { const v = await compileExpression(e).evaluate(scope); console.log("OK", JSON.stringify(v)?.slice(0, 60)); }
  catch (err) { console.log("ERR", (err as Error).message.slice(0, 150)); }
  console.log("   ", e.slice(0, 60), (performance.now() - t).toFixed(1), "ms; longest loop gap", maxGap.toFixed(1));
}
for (const e of [
  "$length($pad('', 1e8))", "$contains(trigger.s, /(a|a?)+b/)", "$count([1..10000000])",
  "($loop := function($n) { $loop($n + 1) }; $loop(0))", "$distinct([1..100000])", "$count($distinct([1..100000].{'a': $}))",
  "$length($join([1..100000].$pad('', 100000)))", "($s := $pad('', 1000000); $length($string([1..1000].$s)))",
  "$reduce([1..40], function($a){$a & $a}, 'x')", "$replace($pad('', 100000, 'a'), 'a', $pad('', 1000, 'b'))",
  "$sum(trigger.items[price > 1].(price * qty)) & ' ' & $uppercase(trigger.customer)", "$",
  "$map([1..99999], function($v){$v*2}) ~> $sum()",
]) await attempt(e);
const simple = compileExpression("$sum(trigger.items.(price * qty)) > 10 ? 'big' : 'small'");
await simple.evaluate(scope);
let t = performance.now();
for (let i = 0; i < 20000; i++) await simple.evaluate(scope);
console.log("simple eval", ((performance.now() - t) / 20000 * 1000).toFixed(1), "µs");
clearInterval(iv);

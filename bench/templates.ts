/**
 * What resolving a step's payload costs (issue 18), in microseconds per resolution, on one
 * core, next to the same work done the way it was before the flow language (every template
 * string parsed again at each resolution):
 *
 * - a payload of plain paths (`{{trigger.order}}`), compiled once per revision: the hot path,
 *   which must cost no more than before;
 * - the same payload parsed at every resolution (as before);
 * - payloads with 1 and 4 JSONata expressions, so that one expression's cost reads as the
 *   difference.
 *
 *   bun bench/templates.ts [--seconds N]
 */
import { compilePayload, parseTemplate, type TemplateScope } from "../packages/core/src/templates/index.ts";
import { lookUp } from "../packages/core/src/templates/payload.ts";
import { flag } from "./lib/args.ts";

const SECONDS = flag("seconds", 2);

const scope: TemplateScope = {
  trigger: { order: "A-1001", qty: 3, customer: { name: "Ada", tier: "gold" }, items: [{ price: 9.5 }, { price: 3 }] },
  steps: { order: { order: "A-1001", big: true } },
};

const PATHS = { order: "{{trigger.order}}", qty: "{{trigger.qty}}", who: "{{trigger.customer.name}}" };

/** Per-call time of `work`, in µs, over SECONDS of calls (after a warm-up). */
async function timed(work: () => unknown | Promise<unknown>): Promise<number> {
  for (let i = 0; i < 2000; i++) await work();
  let calls = 0;
  const started = performance.now();
  const end = started + SECONDS * 1000;
  while (performance.now() < end) {
    for (let i = 0; i < 200; i++) await work();
    calls += 200;
  }
  return ((performance.now() - started) * 1000) / calls;
}

/** The former resolution: parse each string, then look each reference up. */
function parsedEachTime(payload: Record<string, string>) {
  const out: Record<string, unknown> = {};
  for (const [key, text] of Object.entries(payload)) {
    const parts = parseTemplate(text);
    const [only] = parts;
    out[key] = only !== undefined && typeof only !== "string" && only.kind === "path" ? lookUp(scope, only) : text;
  }
  return out;
}

const compiledPaths = compilePayload(PATHS);
const oneExpression = compilePayload({ ...PATHS, big: "{{trigger.qty > 2}}" });
const fourExpressions = compilePayload({
  ...PATHS,
  big: "{{trigger.qty > 2}}",
  total: "{{$sum(trigger.items.price)}}",
  tier: "{{$uppercase(trigger.customer.tier)}}",
  label: "{{trigger.order & '/' & trigger.qty}}",
});

const rows: [string, number][] = [
  ["3 plain paths, compiled (now)", await timed(() => compiledPaths.resolve(scope))],
  ["3 plain paths, parsed each time (before)", await timed(() => parsedEachTime(PATHS))],
  ["3 paths + 1 expression", await timed(() => oneExpression.resolve(scope))],
  ["3 paths + 4 expressions", await timed(() => fourExpressions.resolve(scope))],
];
console.log(`payload resolution, µs per call (${SECONDS} s each, one core)`);
for (const [what, us] of rows) console.log(what.padEnd(42), us.toFixed(2).padStart(8));

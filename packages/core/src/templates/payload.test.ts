import { describe, expect, test } from "bun:test";
import {
  compilePayload,
  ExpressionEvaluationError,
  inspectPayload,
  type ResolveOptions,
  type TemplateScope,
  UrlTemplateError,
} from "./index.ts";

/** A payload compiled and resolved in one go, as a step's is at each attempt. */
const resolvePayload = async (payload: unknown, scope: TemplateScope, options?: ResolveOptions) =>
  compilePayload(payload).resolve(scope, options);

const scope: TemplateScope = {
  trigger: {
    event: "payment_intent.succeeded",
    data: { object: { id: "pi_1", amount: 4200, paid: true, refunds: null, metadata: { plan: "pro" } } },
    items: [{ sku: "a" }, { sku: "b" }],
    headers: { "x-github-event": "push" },
  },
  steps: { fetch: { status: 200, body: { rows: [1, 2, 3] } } },
  secrets: { "stripe-key": "sk_live_123" },
};

describe("inspecting a payload", () => {
  test("lists every reference with the field it is in, through objects and arrays", async () => {
    const { problems, references } = inspectPayload({
      url: "https://x/{{trigger.data.object.id}}",
      headers: [{ authorization: "Bearer {{secrets.stripe-key}}" }],
      body: { rows: "{{steps.fetch.body.rows}}", fixed: 3, flag: true, none: null },
    });
    expect(problems).toEqual([]);
    expect(references).toEqual([
      {
        field: ["url"],
        reference: {
          kind: "path",
          root: "trigger",
          path: ["data", "object", "id"],
          expression: "trigger.data.object.id",
        },
      },
      {
        field: ["headers", 0, "authorization"],
        reference: { kind: "path", root: "secrets", path: ["stripe-key"], expression: "secrets.stripe-key" },
      },
      {
        field: ["body", "rows"],
        reference: {
          kind: "path",
          root: "steps",
          path: ["fetch", "body", "rows"],
          expression: "steps.fetch.body.rows",
        },
      },
    ]);
  });

  test("reports each malformed string with its field, and keeps the references of the others", async () => {
    const { problems, references } = inspectPayload({
      url: "https://x/{{trigger.id",
      list: ["ok", "{{ nope.x }}"],
      "{{key}}": "object keys are not templates",
      note: "{{trigger.note}}",
    });
    expect(problems).toEqual([
      { field: ["url"], message: "unclosed template reference" },
      {
        field: ["list", 1],
        message: 'unknown template root "nope" in {{nope.x}} (trigger, steps, secrets, run, item, index, error)',
      },
    ]);
    expect(references.map((r) => r.reference.expression)).toEqual(["trigger.note"]);
  });
});

describe("resolving a payload", () => {
  test("a string that is exactly one reference keeps the value's type", async () => {
    expect(
      await resolvePayload(
        {
          object: "{{trigger.data.object.metadata}}",
          number: "{{ trigger.data.object.amount }}",
          boolean: "{{trigger.data.object.paid}}",
          array: "{{steps.fetch.body.rows}}",
          element: "{{trigger.items.1}}",
          secret: "{{secrets.stripe-key}}",
          whole: "{{trigger.headers}}",
        },
        scope,
      ),
    ).toEqual({
      object: { plan: "pro" },
      number: 4200,
      boolean: true,
      array: [1, 2, 3],
      element: { sku: "b" },
      secret: "sk_live_123",
      whole: { "x-github-event": "push" },
    });
  });

  test("references inside longer text are written into it, objects as JSON", async () => {
    expect(
      await resolvePayload(
        [
          "id={{trigger.data.object.id}} amount={{trigger.data.object.amount}} paid={{trigger.data.object.paid}}",
          "meta={{trigger.data.object.metadata}} rows={{steps.fetch.body.rows}}",
          "Bearer {{secrets.stripe-key}}",
          " {{trigger.event}}",
          "\\{{trigger.event}} is {{trigger.event}}",
        ],
        scope,
      ),
    ).toEqual([
      "id=pi_1 amount=4200 paid=true",
      'meta={"plan":"pro"} rows=[1,2,3]',
      "Bearer sk_live_123",
      " payment_intent.succeeded",
      "{{trigger.event}} is payment_intent.succeeded",
    ]);
  });

  test("a missing value is null alone and nothing inside text; so is null", async () => {
    expect(
      await resolvePayload(
        {
          missing: "{{trigger.data.nothing.here}}",
          nullValue: "{{trigger.data.object.refunds}}",
          unknownStep: "{{steps.later.body}}",
          unknownSecret: "{{secrets.absent}}",
          outOfRange: "{{trigger.items.7.sku}}",
          notAnIndex: "{{trigger.items.first}}",
          inText: "[{{trigger.data.nothing}}|{{trigger.data.object.refunds}}]",
        },
        scope,
      ),
    ).toEqual({
      missing: null,
      nullValue: null,
      unknownStep: null,
      unknownSecret: null,
      outOfRange: null,
      notAnIndex: null,
      inText: "[|]",
    });
    expect(await resolvePayload("{{trigger.id}}", {})).toBeNull();
  });

  test("only the data's own fields are reachable, never what objects inherit", async () => {
    expect(
      await resolvePayload(
        ["{{trigger.constructor}}", "{{trigger.__proto__}}", "{{trigger.items.length}}", "{{trigger.toString}}"],
        scope,
      ),
    ).toEqual([null, null, null, null]);
  });

  test("values that are not strings, and object keys, pass through untouched; the payload is not changed", async () => {
    const payload = { "{{trigger.event}}": 1, n: 2.5, b: false, z: null, nested: { list: [1, "{{trigger.event}}"] } };
    const copy = structuredClone(payload);
    expect(await resolvePayload(payload, scope)).toEqual({
      "{{trigger.event}}": 1,
      n: 2.5,
      b: false,
      z: null,
      nested: { list: [1, "payment_intent.succeeded"] },
    });
    expect(payload).toEqual(copy);
  });

  test("each resolution writes a fresh value; a `__proto__` key stays a key, in a URL field's payload too", async () => {
    // As a saved payload arrives: JSON.parse makes `__proto__` an own key.
    const compiled = compilePayload(
      JSON.parse('{"__proto__": {"polluted": "{{trigger.event}}"}, "url": "https://x/", "list": [{}]}'),
    );
    for (const options of [{}, { urlFields: ["url"] }]) {
      const first = (await compiled.resolve(scope, options)) as Record<string, unknown>;
      expect(Object.getPrototypeOf(first)).toBe(Object.prototype);
      expect((first as { polluted?: unknown }).polluted).toBeUndefined();
      expect(JSON.stringify(first)).toBe(
        '{"__proto__":{"polluted":"payment_intent.succeeded"},"url":"https://x/","list":[{}]}',
      );
      const second = (await compiled.resolve(scope, options)) as { list: object[] };
      expect(second).not.toBe(first);
      expect(second.list).not.toBe(first.list);
      expect(second.list[0]).not.toBe((first as { list: object[] }).list[0]);
    }
  });

  test("a malformed reference cannot be resolved", async () => {
    await expect(resolvePayload({ url: "{{trigger.id" }, scope)).rejects.toThrow("unclosed template reference");
  });
});

describe("resolving a URL field", () => {
  const urlScope: TemplateScope = {
    trigger: {
      params: { id: "..%2F..%2Fadmin" },
      q: "x?api_key=attacker&",
      next: "https://other.example/a?b=1",
      dots: "..",
    },
    secrets: { key: "s3cr3t/&=+ é" },
  };
  const url = async (text: string) =>
    ((await resolvePayload({ url: text }, urlScope, { urlFields: ["url"] })) as { url: string }).url;

  test("a value inside the text stays in its path segment or query value, whatever it holds", async () => {
    expect(await url("https://api.example/items/{{trigger.params.id}}/detail")).toBe(
      "https://api.example/items/..%252F..%252Fadmin/detail",
    );
    expect(await url("https://api.example/search?q={{trigger.q}}&page=2")).toBe(
      "https://api.example/search?q=x%3Fapi_key%3Dattacker%26&page=2",
    );
    expect(await url("https://api.example/v1?key={{secrets.key}}")).toBe(
      "https://api.example/v1?key=s3cr3t%2F%26%3D%2B%20%C3%A9",
    );
    const parsed = new URL(await url("https://api.example/items/{{trigger.params.id}}?q={{trigger.q}}"));
    expect(parsed.pathname).toBe("/items/..%252F..%252Fadmin");
    expect([...parsed.searchParams.keys()]).toEqual(["q"]);
  });

  test("a URL that is exactly one reference is taken as it is, for the address guard to check", async () => {
    expect(await url("{{trigger.next}}")).toBe("https://other.example/a?b=1");
  });

  test("a value that would make a whole path segment . or .. is refused; inside a segment or the query it is text", async () => {
    await expect(url("https://api.example/items/{{trigger.dots}}/admin")).rejects.toThrow(UrlTemplateError);
    await expect(url("https://api.example/items/{{trigger.dots}}")).rejects.toThrow(
      'would make the URL\'s path segment ".."',
    );
    expect(await url("https://api.example/items/v{{trigger.dots}}")).toBe("https://api.example/items/v..");
    expect(await url("https://api.example/items?d={{trigger.dots}}")).toBe("https://api.example/items?d=..");
  });

  test("other fields and other payloads are resolved as before", async () => {
    expect(
      await resolvePayload({ url: "https://x/{{trigger.q}}", body: "{{trigger.q}}" }, urlScope, { urlFields: ["url"] }),
    ).toEqual({ url: "https://x/x%3Fapi_key%3Dattacker%26", body: "x?api_key=attacker&" });
    expect(await resolvePayload({ url: "https://x/{{trigger.q}}" }, urlScope)).toEqual({
      url: "https://x/x?api_key=attacker&",
    });
  });
});

describe("expressions", () => {
  const order: TemplateScope = {
    trigger: {
      body: {
        amount: 150,
        items: [
          { sku: "a", qty: 2, price: 10 },
          { sku: "b", qty: 0, price: 5 },
          { sku: "c", qty: 1, price: 7.5 },
        ],
      },
    },
    steps: { fetch: { status: 200 } },
    secrets: { "api-key": "k_1" },
    run: { id: "run-1", flow_id: "flow-1", started_at: null },
    item: { sku: "z" },
    index: 3,
  };

  test("compare, compute, filter and map, keeping the value's type when alone", async () => {
    expect(
      await resolvePayload(
        {
          big: "{{trigger.body.amount > 100}}",
          total: "{{$sum(trigger.body.items.price)}}",
          skus: "{{trigger.body.items[qty > 0].sku}}",
          label: "{{ $uppercase(item.sku) & '-' & index }}",
          text: "ok={{steps.fetch.status = 200}} first={{trigger.body.items[0].sku}}",
          pick: "{{trigger.body.amount > 100 ? 'large' : 'small'}}",
          secret: "{{secrets.`api-key`}}",
          run: "{{run.id}}",
        },
        order,
      ),
    ).toEqual({
      big: true,
      total: 22.5,
      skus: ["a", "c"],
      label: "Z-3",
      text: "ok=true first=a",
      pick: "large",
      secret: "k_1",
      run: "run-1",
    });
  });

  test("an expression that matches nothing is null alone and nothing in text", async () => {
    expect(
      await resolvePayload({ none: "{{trigger.body.items[qty > 99].sku}}", text: "[{{ trigger.nope & '' }}]" }, order),
    ).toEqual({
      none: null,
      text: "[]",
    });
  });

  test("an expression past its budget fails with a clear error instead of holding the worker", async () => {
    await expect(resolvePayload("{{ $count([1..10000000]) }}", order)).rejects.toThrow(ExpressionEvaluationError);
    await expect(resolvePayload("{{ $count([1..10000000]) }}", order)).rejects.toThrow("maximum sequence length");
    const forever = "{{ ($loop := function($n) { $loop($n + 1) }; $loop(0)) }}";
    await expect(resolvePayload(forever, order)).rejects.toThrow(/evaluation steps|stack/i);
    await expect(resolvePayload("{{ trigger.body.items.sku + 1 }}", order)).rejects.toThrow(ExpressionEvaluationError);
  });

  test("regular expressions run in linear time: patterns that backtrack exponentially elsewhere answer at once", async () => {
    const run = { trigger: { s: `${"a".repeat(5000)}!` } };
    for (const pattern of ["(a+)+$", "(a|a)*b", "(a|a?)+b", "(.*){9}x", "([a-z]+\\d{1,3})+z"]) {
      expect(inspectPayload({ m: `{{ $contains(trigger.s, /${pattern}/) }}` }).problems).toEqual([]);
      expect(await resolvePayload(`{{ $contains(trigger.s, /${pattern}/) }}`, run)).toBe(false);
    }
    expect(await resolvePayload("{{ $contains('order-17', /order-\\d+/) }}", order)).toBe(true);
    expect(await resolvePayload("{{ $match('😀 ab AB', /(a)(b)/i).groups }}", order)).toEqual(["a", "b", "A", "B"]);
  });

  test("a pattern that needs backtracking (look-around, back-references) is refused when saved, naming RE2", () => {
    for (const pattern of ["(?=a)b", "(a)\\1"]) {
      const { problems } = inspectPayload({ m: `{{ $match(trigger.s, /${pattern}/) }}` });
      expect(problems[0]?.message).toContain("is not RE2 syntax");
    }
  });

  test("each limit of an evaluation fails it with a message naming the limit, before it holds the process", async () => {
    const refusals: [string, string][] = [
      ["$length($pad('', 1e8))", "a string of 100,000,000 characters or items; the limit is 262,144"],
      ["$length($join([1..1000].$pad('', 1000)))", "a string of 1,000,000 characters"],
      ["($s := $pad('', 200000); $string([$s, $s]))", "the value given to $string is longer than 262,144"],
      ["$replace($pad('', 50000, 'a'), 'a', 'bbbbbbbbbb')", "a string of 550,000 characters"],
      ["$length($pad('', 150000, 'a') & $pad('', 150000, 'a'))", "a string of 300,000 characters"],
      ["$length($pad('', 100001, 'x') ~> $uppercase())", "$uppercase takes text of at most 100,000 characters"],
      ["($loop := function($n) { $loop($n + 1) }; $loop(0))", "more than 200,000 evaluation steps"],
      ["$eval('1' & $join([1..2100].('+1')))", "$eval takes an expression of at most 4,096 characters"],
    ];
    for (const [expression, message] of refusals) {
      await expect(resolvePayload(`{{ ${expression} }}`, order)).rejects.toThrow(message);
    }
  });

  test("$distinct and $sort keep JSONata's answers without its quadratic cost", async () => {
    expect(
      await resolvePayload("{{ $distinct([3, 1, 3, '3', {'a': 1, 'b': 2}, {'b': 2, 'a': 1}, [1], [1]]) }}", order),
    ).toEqual([3, 1, "3", { a: 1, b: 2 }, [1]]);
    expect(await resolvePayload("{{ $sort([3, 1, 2, 10]) }}", order)).toEqual([1, 2, 3, 10]);
    expect(await resolvePayload("{{ $sort(['b', 'a', 'B']) }}", order)).toEqual(["B", "a", "b"]);
    const byQty = "{{ $sort(trigger.body.items, function($l, $r) { $l.qty > $r.qty }).sku }}";
    expect(await resolvePayload(byQty, order)).toEqual(
      await resolvePayload("{{ trigger.body.items^(qty).sku }}", order),
    );
    expect(await resolvePayload("{{ $count($sort([1..50000])) }}", order)).toBe(50000);
    await expect(resolvePayload("{{ $sort([1, 'a']) }}", order)).rejects.toThrow("D3070");
  });

  test("the paths an expression reads are references: checked like plain ones", () => {
    const { problems, references } = inspectPayload({
      when: "{{ steps.fetch.status = 200 and secrets.`api-key` != '' }}",
      bad: "{{ trigger.body.amount > }}",
    });
    expect(references.map(({ field, reference }) => [field.join("."), reference.expression])).toEqual([
      ["when", "steps.fetch.status"],
      ["when", "secrets.api-key"],
    ]);
    expect(problems).toEqual([
      { field: ["bad"], message: expect.stringContaining("invalid expression {{trigger.body.amount >}}") },
    ]);
  });
});

import { describe, expect, test } from "bun:test";
import { parseTemplate, type TemplateReference, type TemplateRoot, TemplateSyntaxError } from "./parse.ts";

function refusal(text: string): string {
  try {
    parseTemplate(text);
  } catch (error) {
    if (error instanceof TemplateSyntaxError) return error.message;
    throw error;
  }
  throw new Error(`${text} was accepted`);
}

const ref = (expression: string): TemplateReference => {
  const [root, ...path] = expression.split(".");
  return { kind: "path", root: root as TemplateRoot, path, expression };
};

describe("parsing template references", () => {
  test("text without references is one literal part", () => {
    expect(parseTemplate("https://api.example.com/v1")).toEqual(["https://api.example.com/v1"]);
    expect(parseTemplate("")).toEqual([""]);
    expect(parseTemplate("a }} b")).toEqual(["a }} b"]);
  });

  test("a whole-string reference is one reference part, spaces inside the braces ignored", () => {
    expect(parseTemplate("{{trigger.data.id}}")).toEqual([ref("trigger.data.id")]);
    expect(parseTemplate("{{  trigger.data.id \t}}")).toEqual([ref("trigger.data.id")]);
    expect(parseTemplate("{{trigger}}")).toEqual([ref("trigger")]);
  });

  test("references among text keep their order, with the text between them", () => {
    expect(parseTemplate("Bearer {{secrets.api-token}}")).toEqual(["Bearer ", ref("secrets.api-token")]);
    expect(parseTemplate("{{steps.fetch.body.items.0}}/{{trigger.headers.x-github-event}}!")).toEqual([
      ref("steps.fetch.body.items.0"),
      "/",
      ref("trigger.headers.x-github-event"),
      "!",
    ]);
    expect(parseTemplate("{{trigger.a}}}")).toEqual([ref("trigger.a"), "}"]);
  });

  test("\\{{ writes a literal {{", () => {
    expect(parseTemplate("\\{{ not a reference }}")).toEqual(["{{ not a reference }}"]);
    expect(parseTemplate("x \\{{y}} {{trigger.z}}")).toEqual(["x {{y}} ", ref("trigger.z")]);
  });

  test.each([
    ["{{trigger.id", "unclosed template reference"],
    ["id: {{ trigger.id }", "unclosed template reference"],
    ["{{trigger.a {{trigger.b}}", "unclosed template reference"],
    ["{{}}", "empty template reference"],
    ["{{   }}", "empty template reference"],
    [
      "{{trigger.first name}}",
      'invalid expression {{trigger.first name}}: S0201: Syntax error: "name" at character 18',
    ],
    ["{{trigger..id}}", 'invalid expression {{trigger..id}}: S0201: Syntax error: ".." at character 9'],
    ["{{trigger.id.}}", "invalid expression {{trigger.id.}}: S0207: Unexpected end of expression at character 11"],
    [
      "{{ env.HOME }}",
      'unknown template root "env" in {{env.HOME}} (trigger, steps, secrets, run, item, index, error)',
    ],
    [
      "{{Trigger.id}}",
      'unknown template root "Trigger" in {{Trigger.id}} (trigger, steps, secrets, run, item, index, error)',
    ],
    [
      "{{ secrets.db.password = 'x' }}",
      "in {{secrets.db.password = 'x'}}: {{secrets.db.password}}: a secret is named by its key alone, nothing after it",
    ],
    ["{{steps}}", "{{steps}} needs a step name: {{steps.<name>}}"],
    ["{{secrets}}", "{{secrets}} needs a key: {{secrets.<key>}}"],
    ["{{secrets.db.password}}", "{{secrets.db.password}}: a secret is named by its key alone, nothing after it"],
  ])("%p is refused: %s", (text, message) => {
    expect(refusal(text)).toBe(message);
  });
});

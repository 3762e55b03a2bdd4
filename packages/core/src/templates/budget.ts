/**
 * What one definition (a flow, a node template) may hold of templates, counted before any of
 * them is parsed: parsing costs about half a microsecond a character, so these keep a save,
 * a validation and a revision's first compile to a few milliseconds of a shared process.
 */
export const DEFINITION_TEMPLATE_LIMITS = {
  /** `{{ }}` templates in all its fields. */
  templates: 1000,
  /** Characters between their braces, in all. */
  characters: 32_768,
} as const;

const count = (n: number) => n.toLocaleString("en");

/** Why `input` holds more templates than a definition may, or undefined. Reads every string once, parses none. */
export function templateBudgetProblem(input: unknown): string | undefined {
  let templates = 0;
  let characters = 0;
  const pending: unknown[] = [input];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === "string") {
      for (let open = value.indexOf("{{"); open !== -1; ) {
        const close = value.indexOf("}}", open + 2);
        if (close === -1) break;
        templates += 1;
        characters += close - open - 2;
        open = value.indexOf("{{", close + 2);
      }
      if (templates > DEFINITION_TEMPLATE_LIMITS.templates) {
        return `holds more than ${count(DEFINITION_TEMPLATE_LIMITS.templates)} templates ({{ }}) in all its fields`;
      }
      if (characters > DEFINITION_TEMPLATE_LIMITS.characters) {
        return `holds more than ${count(DEFINITION_TEMPLATE_LIMITS.characters)} characters of templates ({{ }}) in all its fields`;
      }
    } else if (value !== null && typeof value === "object") {
      for (const item of Array.isArray(value) ? value : Object.values(value)) pending.push(item);
    }
  }
  return undefined;
}

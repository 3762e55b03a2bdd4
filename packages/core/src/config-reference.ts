import type { z } from "zod";

/** A group of settings as the reference lists them: one process's schema, or the variables compose reads. */
export interface SettingsSection {
  title: string;
  /** What reads them. */
  about: string;
  settings: Record<string, z.ZodType> | Record<string, { description: string; fallback?: string }>;
}

interface SchemaDef {
  type: string;
  defaultValue?: unknown;
  in?: { def: SchemaDef };
  innerType?: { def: SchemaDef };
}

/** The default a variable takes when unset, as it would be written in the environment (undefined: none). */
function defaultOf(def: SchemaDef): unknown {
  if (def.type === "default") return def.defaultValue;
  if (def.type === "pipe" && def.in) return defaultOf(def.in.def);
  if (def.type === "optional" && def.innerType) return defaultOf(def.innerType.def);
  return undefined;
}

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

function rowOf(name: string, setting: z.ZodType | { description: string; fallback?: string }): string {
  const schema = "def" in setting ? (setting as unknown as z.ZodType & { def: SchemaDef }) : undefined;
  const description = schema ? (schema.meta()?.description ?? "") : (setting as { description: string }).description;
  const fallback = schema ? defaultOf(schema.def) : (setting as { fallback?: string }).fallback;
  const shown = fallback === undefined || fallback === "" ? "" : `\`${String(fallback)}\``;
  return `| \`${name}\` | ${shown} | ${cell(description)} |`;
}

/**
 * The configuration reference (docs/configuration.md), made from the settings' schemas: each
 * variable with its default and the description its schema carries, so the document cannot
 * drift from what the processes read. A variable in several sections is listed in the first.
 */
export function configurationReference(sections: SettingsSection[]): string {
  const listed = new Set<string>();
  const parts = [
    "# Configuration",
    "",
    "Every setting is an environment variable; embedded mode (`bun run start`) needs none of them. " +
      "`.env.example` lists them all with their defaults. This page is generated from the settings' schemas " +
      "(`bun run docs:config`); a test fails when it is out of date.",
  ];
  for (const section of sections) {
    const names = Object.keys(section.settings).filter((name) => !listed.has(name));
    for (const name of names) listed.add(name);
    parts.push(
      "",
      `## ${section.title}`,
      "",
      section.about,
      "",
      "| Variable | Default | What it sets |",
      "|---|---|---|",
    );
    for (const name of names) {
      parts.push(rowOf(name, (section.settings as Record<string, z.ZodType>)[name] as z.ZodType));
    }
  }
  return `${parts.join("\n")}\n`;
}

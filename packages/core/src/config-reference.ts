import type { z } from "zod";

/** A variable no schema reads (compose's own), described by hand. */
export interface DescribedVariable {
  description: string;
  fallback?: string;
}

/** A group of settings as the reference lists them: one process's schema, or the variables compose reads. */
export interface SettingsSection {
  title: string;
  /** What reads them. */
  about: string;
  settings: Record<string, z.ZodType | DescribedVariable>;
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

const isSchema = (setting: z.ZodType | DescribedVariable): setting is z.ZodType => "def" in setting;

function rowOf(name: string, setting: z.ZodType | DescribedVariable): string {
  const description = isSchema(setting) ? (setting.meta()?.description ?? "") : setting.description;
  const fallback = isSchema(setting) ? defaultOf(setting.def as unknown as SchemaDef) : setting.fallback;
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
    for (const name of names) parts.push(rowOf(name, section.settings[name] as z.ZodType | DescribedVariable));
  }
  return `${parts.join("\n")}\n`;
}

/** `--name N` from the command line: a positive whole number, or `fallback` when absent. */
export function flag(name: string, fallback: number): number {
  const at = Bun.argv.indexOf(`--${name}`);
  const value = at > 0 ? Number(Bun.argv[at + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive whole number`);
  return value;
}

/** `--name a,b,c` from the command line: its comma-separated items, or `fallback` when absent. */
export function listFlag(name: string, fallback: readonly string[]): string[] {
  const at = Bun.argv.indexOf(`--${name}`);
  return at > 0 ? (Bun.argv[at + 1] ?? "").split(",").filter(Boolean) : [...fallback];
}

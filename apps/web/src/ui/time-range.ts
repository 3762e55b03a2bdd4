/**
 * A `datetime-local` field's text (a wall-clock time in the person's own time zone) as the
 * ISO 8601 instant it names; nothing when the field is empty or holds no time.
 */
export function instantOf(local: string): string | undefined {
  if (!local) return undefined;
  const at = new Date(local);
  return Number.isNaN(at.getTime()) ? undefined : at.toISOString();
}

/** The `from`/`to` bounds of a run list from its From and To fields: a bound only where one is given. */
export function timeRangeOf(from: string, to: string): { from?: string; to?: string } {
  const start = instantOf(from);
  const end = instantOf(to);
  return { ...(start ? { from: start } : {}), ...(end ? { to: end } : {}) };
}

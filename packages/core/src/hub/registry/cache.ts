/**
 * Answers of this process, valid for one generation of the mirror: the mirror changes
 * only when a sync writes (at most once per interval), and every request asks for the
 * current generation first (see version-watch.ts), so a kept answer is what the database
 * answers for it.
 * Kept up to a budget of bytes and a count, least recently used first out; a budget
 * of 0 keeps nothing.
 */
export interface AnswerCache<T> {
  /** The value kept for `key` in `generation`. */
  get(generation: number, key: string): T | undefined;
  set(generation: number, key: string, value: T, bytes: number): void;
}

export function createAnswerCache<T>(options: { maxBytes: number; maxEntries: number }): AnswerCache<T> {
  let current = -1;
  let used = 0;
  const entries = new Map<string, { value: T; bytes: number }>();
  const sameGeneration = (generation: number) => {
    if (generation === current) return;
    entries.clear();
    used = 0;
    current = generation;
  };
  return {
    get(generation, key) {
      if (generation !== current) return undefined;
      const entry = entries.get(key);
      if (!entry) return undefined;
      // Most recently used last.
      entries.delete(key);
      entries.set(key, entry);
      return entry.value;
    },
    set(generation, key, value, bytes) {
      if (options.maxBytes <= 0 || generation < current || bytes > options.maxBytes) return;
      sameGeneration(generation);
      const previous = entries.get(key);
      if (previous) {
        used -= previous.bytes;
        entries.delete(key);
      }
      entries.set(key, { value, bytes });
      used += bytes;
      for (const [oldest, entry] of entries) {
        if (used <= options.maxBytes && entries.size <= options.maxEntries) break;
        entries.delete(oldest);
        used -= entry.bytes;
      }
    },
  };
}

/**
 * The size of a value as JSON would write it, counted up to a limit: a walk that stops as soon
 * as the count passes the limit costs at most the limit, whatever the value (an array holding
 * the same long string 100,000 times, or a value that holds itself, is stopped early instead
 * of being written out). Shared references are counted each time they appear, as JSON writes
 * them; key quoting is counted, escapes are not, and a JSONata function counts as a word.
 */
export function jsonSizeWithin(value: unknown, limit: number): number | undefined {
  let size = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === "string") size += item.length + 2;
    else if (typeof item === "number") size += String(item).length;
    else if (item === null || typeof item !== "object" || isFunction(item)) size += 5;
    else if (Array.isArray(item)) {
      size += 1 + item.length;
      for (let index = item.length - 1; index >= 0 && size <= limit; index--) pending.push(item[index]);
    } else {
      size += 1;
      for (const key in item) {
        if (!Object.hasOwn(item, key)) continue;
        size += key.length + 4;
        if (size > limit) break;
        pending.push((item as Record<string, unknown>)[key]);
      }
    }
    if (size > limit) return undefined;
  }
  return size;
}

const isFunction = (value: object) => "_jsonata_lambda" in value || "_jsonata_function" in value;

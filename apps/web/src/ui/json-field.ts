/** JSON typed into a textarea: the value, or why it is not JSON yet. */
export function parseJson(text: string): { value: unknown } | { error: string } {
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    return { error: error instanceof Error ? error.message : "not JSON" };
  }
}

/**
 * JSON a person typed, as the input it is meant for. The console cannot check it (the API's
 * schemas are the server's): the API does, and its 400 names each problem, which the form
 * shows beside what was typed. The one place where typed JSON takes an input's type.
 */
export function typedJson<T>(value: unknown): T {
  return value as T;
}

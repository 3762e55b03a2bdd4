/** JSON typed into a textarea: the value, or why it is not JSON yet. */
export function parseJson(text: string): { value: unknown } | { error: string } {
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    return { error: error instanceof Error ? error.message : "not JSON" };
  }
}

/** The media type of a Content-Type value, lower-cased and without parameters (`application/json`). */
export function mediaTypeOf(contentType: string | null | undefined): string {
  return (contentType ?? "").split(";", 1)[0]?.trim().toLowerCase() ?? "";
}

/** `application/json` and the `+json` types (`application/cloudevents+json`). */
export function isJsonMediaType(type: string): boolean {
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}

/** Percent-encoding as RFC 6570 simple expansion writes a value into a URL: every character but the unreserved `A-Za-z0-9-._~`. */
export function encodeUrlValue(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

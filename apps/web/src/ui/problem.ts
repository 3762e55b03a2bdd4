import { PlatformError } from "@platform/client";

/** An API failure as a person can act on it: what went wrong, and which fields to fix. */
export interface Problem {
  message: string;
  /** Field name → what is wrong with it (from `invalid input: field: message; ...`). */
  fields: Record<string, string>;
  status: number;
}

const INVALID_INPUT = "invalid input: ";

export function problemOf(error: unknown): Problem {
  if (!(error instanceof PlatformError)) {
    return { message: error instanceof Error ? error.message : String(error), fields: {}, status: 0 };
  }
  const fields: Record<string, string> = {};
  if (error.status === 400 && error.message.startsWith(INVALID_INPUT)) {
    for (const part of error.message.slice(INVALID_INPUT.length).split("; ")) {
      const colon = part.indexOf(": ");
      if (colon > 0) fields[part.slice(0, colon)] = part.slice(colon + 2);
    }
  }
  return { message: messageFor(error), fields, status: error.status };
}

function messageFor(error: PlatformError): string {
  switch (error.status) {
    case 0:
      return "The platform cannot be reached. Check your connection and try again.";
    case 403:
      return `Not allowed: ${error.message}. Ask an owner or admin of the account for this permission.`;
    case 429:
      return `Too many attempts: ${error.message}. Wait a moment and try again.`;
    default:
      return error.status >= 500
        ? `The platform failed (${error.message}); request ${error.requestId}.`
        : error.message;
  }
}

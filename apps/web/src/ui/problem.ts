import { PlatformError } from "@platform/client";

/** An API failure as a person can act on it: what went wrong, and which fields to fix. */
export interface Problem {
  message: string;
  /** Field path (`name`, `limit.time`, `steps.2.payload.url`) → what is wrong with it, from the answer's `problems`. */
  fields: Record<string, string>;
  status: number;
}

export function problemOf(error: unknown): Problem {
  if (!(error instanceof PlatformError)) {
    return { message: error instanceof Error ? error.message : String(error), fields: {}, status: 0 };
  }
  return { message: messageFor(error), fields: fieldsOf(error.problems), status: error.status };
}

/** The problems that name a field, by field; two about one field read as one. The input as a whole (path "") is no field. */
export function fieldsOf(problems: PlatformError["problems"]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const { path, message } of problems) {
    if (path) fields[path] = fields[path] ? `${fields[path]}; ${message}` : message;
  }
  return fields;
}

function messageFor(error: PlatformError): string {
  switch (error.status) {
    case 0:
      return "The platform cannot be reached. Check your connection and try again.";
    case 403:
      return `Not allowed: ${error.message}. Ask an owner or admin of the account for this permission.`;
    case 429:
      return `Too many attempts: ${error.message}. Wait a moment and try again.`;
    case 502:
    case 504:
      // Another server failed or was late (an upstream registry, an MCP server): the text says which.
      return error.message;
    default:
      return error.status >= 500
        ? `The platform failed (${error.message}); request ${error.requestId}.`
        : error.message;
  }
}

import { z } from "zod";
import { unsafeTextReason } from "./input-guard.ts";

/**
 * Path parameters reach procedures URL-encoded (`a%2Fb`) through the REST adapter;
 * this decodes them once, here. The input guard sees them encoded, so the decoded text
 * gets its check here (`%00` would otherwise reach a query).
 */
export const pathParam = (description: string) =>
  z
    .string()
    .min(1)
    .transform((value, ctx) => {
      let decoded: string;
      try {
        decoded = decodeURIComponent(value);
      } catch {
        ctx.addIssue({ code: "custom", message: "is not valid URL encoding" });
        return z.NEVER;
      }
      const reason = unsafeTextReason(decoded);
      if (reason) {
        ctx.addIssue({ code: "custom", message: reason });
        return z.NEVER;
      }
      return decoded;
    })
    .meta({ description });

/** An id as the platform makes them (any UUID, in either case). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path parameter naming something by its id: ids are UUIDs, anything else is refused before a query. */
export const uuidParam = (description: string) => pathParam(description).pipe(z.uuid({ error: "must be a UUID" }));

/**
 * A boolean in a query string. The REST adapter would coerce with `Boolean()`, which
 * makes `"false"` true; this reads `true/1` and `false/0` and rejects anything else.
 */
export const queryBoolean = z.preprocess((value) => {
  if (value === "true" || value === "1") return true;
  if (value === "false" || value === "0") return false;
  return value;
}, z.boolean());

export const messageResponse = z.object({ message: z.string().meta({ example: "success" }) });

export const success = { message: "success" } as const;

/** A mutation's resolver that does `work` and answers `{"message": "success"}`, for `.output(messageResponse)`. */
export const answeringSuccess =
  <Options>(work: (options: Options) => Promise<unknown>) =>
  async (options: Options): Promise<typeof success> => {
    await work(options);
    return success;
  };

/** Error statuses documented for procedures that take a credential. */
export const withCredential = { 400: "Invalid input", 401: "Credential missing or invalid", 403: "Not allowed" };
/** The answer of an operation that saves a definition holding templates, past DEFINITION_TEMPLATE_LIMITS. */
export const tooManyTemplates = {
  413: "The definition (for a flow, with the node templates it copies) holds more templates than a definition may",
};
/** The answer of an operation that saves a flow, which writes a revision: past the template limits, or the plan's revision bytes. */
export const flowTooLarge = {
  413: `${tooManyTemplates[413]}, or its revision would take the account past its plan's flow_revision_bytes (the limit is in \`limit\`)`,
};
/**
 * A whole number in a JSON body, taken as sent. The REST adapter coerces the numbers of a
 * body (`"7"`, `true`, `null` and `[]` would all pass); it does not reach into a pipe, so
 * a wrong JSON type stays a 400.
 */
export const bodyInteger = (min: number, max: number) => z.number().int().min(min).max(max).pipe(z.number());

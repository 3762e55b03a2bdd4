import { z } from "zod";

/**
 * Path parameters reach procedures URL-encoded (`a%2Fb`) through the REST adapter;
 * this decodes them once, here.
 */
export const pathParam = (description: string) =>
  z
    .string()
    .min(1)
    .transform((value, ctx) => {
      try {
        return decodeURIComponent(value);
      } catch {
        ctx.addIssue({ code: "custom", message: "is not valid URL encoding" });
        return z.NEVER;
      }
    })
    .meta({ description });

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

/** Error statuses documented for procedures that take a credential. */
export const withCredential = { 400: "Invalid input", 401: "Credential missing or invalid", 403: "Not allowed" };

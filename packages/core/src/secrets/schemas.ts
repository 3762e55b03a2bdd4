import { z } from "zod";
import { pathParam } from "../schemas.ts";

/** Secret keys are what `{{secrets.<key>}}` can name: letters, digits, `_` and `-`, case-sensitive. */
const SECRET_KEY = /^[A-Za-z0-9_-]{1,128}$/;
/** Largest secret value, in UTF-8 bytes. */
const MAX_SECRET_BYTES = 65_536;

const keyRule = "1-128 letters, digits, _ or - (case-sensitive)";

const secretKey = pathParam(`Key of the secret: ${keyRule}.`).pipe(
  z.string().regex(SECRET_KEY, { error: `must be ${keyRule}` }),
);

export const secretKeyInput = z.object({ key: secretKey });

export const putSecretInput = z.object({
  key: secretKey,
  value: z
    .string()
    .min(1, { error: "must not be empty" })
    .refine((value) => Buffer.byteLength(value, "utf8") <= MAX_SECRET_BYTES, {
      error: `must be at most ${MAX_SECRET_BYTES} bytes`,
    })
    .meta({ description: `The secret, at most ${MAX_SECRET_BYTES} bytes (UTF-8); stored sealed, never as written.` }),
});

export const secret = z.object({ key: z.string(), value: z.string() }).meta({ id: "Secret" });

export const secretEntry = z
  .object({
    key: z.string(),
    modified: z.number().int().meta({ description: "When the value was last written, Unix time in seconds." }),
  })
  .meta({ id: "SecretEntry" });

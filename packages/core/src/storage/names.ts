import { z } from "zod";
import { pathParam } from "../schemas.ts";

/**
 * How streams, buckets and keys may be named. The rules keep every name usable as one
 * URL path segment (`.` and `..` alone are not: clients resolve them away) and short
 * enough for any index.
 */

/** Stream and bucket names: 1–64 of `A-Z a-z 0-9 _ - . =`, starting with a letter or digit. */
export const NAME_RULE = "1–64 characters of `A-Z a-z 0-9 _ - . =`, starting with a letter or digit";
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.=-]{0,63}$/;

/** Keys: 1–255 of `A-Z a-z 0-9 _ - . = / : @`, not `.` or `..` alone. Send `/` as `%2F` in a path. */
export const KEY_RULE =
  "1–255 characters of `A-Z a-z 0-9 _ - . = / : @`, other than `.` and `..` (send `/` as `%2F` in a path)";
export const MAX_KEY_LENGTH = 255;
const KEY_CHARACTERS = /^[A-Za-z0-9_.=/:@-]*$/;

const nameText = z.string().max(64, "must be at most 64 characters").regex(NAME, `must be ${NAME_RULE}`);

/** A stream or bucket name in a path, decoded and checked. */
export const namePathParam = (description: string) => pathParam(`${description} ${NAME_RULE}.`).pipe(nameText);

/** The characters keys (and key prefixes) may hold, at most `MAX_KEY_LENGTH` of them. */
export const keyText = z
  .string()
  .max(MAX_KEY_LENGTH, `must be at most ${MAX_KEY_LENGTH} characters`)
  .regex(KEY_CHARACTERS, "may only hold `A-Z a-z 0-9 _ - . = / : @`");

/** A key in a path, decoded and checked. */
export const keyPathParam = (description: string) =>
  pathParam(`${description} ${KEY_RULE}.`).pipe(
    keyText.refine((key) => key !== "." && key !== "..", "cannot be `.` or `..`"),
  );

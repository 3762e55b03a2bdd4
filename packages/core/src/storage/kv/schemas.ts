import { z } from "zod";
import { bodyInteger } from "../../schemas.ts";
import { MAX_DURATION_S } from "../limits.ts";
import { keyPathParam, keyText, namePathParam } from "../names.ts";

const bucketName = namePathParam("Name of the bucket:");
const keyName = keyPathParam("The key:");

export const MAX_LIST_LIMIT = 1000;

export const bucketInput = z.object({ bucket: bucketName });

export const putBucketInput = z.object({
  bucket: bucketName,
  description: z.string().max(1024).default("").meta({ description: "Up to 1,024 characters." }),
});

export const bucket = z
  .object({
    name: z.string(),
    description: z.string(),
    created: z.number().int().meta({ description: "Unix seconds." }),
    modified: z.number().int().meta({ description: "When the description last changed, in Unix seconds." }),
  })
  .meta({ id: "KvBucket" });

export const keyInput = z.object({ bucket: bucketName, key: keyName });

export const putKeyInput = z.object({
  bucket: bucketName,
  key: keyName,
  value: z
    .unknown()
    .refine((value) => value !== undefined, "is required")
    .meta({ description: "Any JSON value (object, array, string, number, boolean or null), up to 1 MiB as JSON." }),
  ttl_s: bodyInteger(1, MAX_DURATION_S)
    .optional()
    .meta({ description: `The key expires this many seconds after the write (1–${MAX_DURATION_S}); absent: never.` }),
  revision: bodyInteger(0, Number.MAX_SAFE_INTEGER).optional().meta({
    description:
      "Compare-and-set: write only if the key is at this revision, 0 only if it does not exist. Otherwise 409 `conflict`, with the current revision in `X-Current-Revision`.",
  }),
});

export const putKeyResult = z.object({
  message: z.string().meta({ example: "success" }),
  revision: z.number().int().meta({ description: "The key's new revision." }),
});

export const keyEntry = z
  .object({
    key: z.string(),
    value: z.unknown().meta({ description: "The JSON value as written." }),
    revision: z
      .number()
      .int()
      .meta({ description: "Grows with every write to the bucket; pass it as `revision` to compare-and-set." }),
    modified: z.number().int().meta({ description: "When the value was written, in Unix seconds." }),
  })
  .meta({ id: "KvKey" });

export const listKeysInput = z.object({
  bucket: bucketName,
  // Query parameters: the generator drops what is set on `.optional()`, so `.meta()` goes first.
  prefix: keyText.meta({ description: "Only keys that start with this." }).optional(),
  cursor: keyText.min(1).meta({ description: "A previous page's `next`." }).optional(),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_LIST_LIMIT)
    .default(100)
    .meta({ description: `Most keys in the page (1–${MAX_LIST_LIMIT}, default 100).` }),
});

export const keysPage = z.object({
  data: z.array(z.string()).meta({ description: "Keys in byte order." }),
  next: z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last page." }),
});

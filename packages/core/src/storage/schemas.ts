import { z } from "zod";
import { pathParam } from "../schemas.ts";

export const publishInput = z.object({
  name: pathParam("Name of the stream."),
  stream: z.string().min(1),
  subject: z.string().min(1),
  body: z.record(z.string(), z.unknown()),
});

export const putBucketInput = z.object({
  bucket: pathParam("Name of the bucket."),
  description: z.string(),
});

import { notImplemented } from "../not-implemented.ts";
import { messageResponse } from "../schemas.ts";
import { authedProcedure, router } from "../trpc.ts";
import { publishInput, putBucketInput } from "./schemas.ts";

export const storageRouter = router({
  streams: router({
    publish: authedProcedure
      .meta({
        openapi: {
          method: "POST",
          path: "/storage/streams/{name}/messages",
          tags: ["storage"],
          summary: "Publish a message to a stream",
          protect: true,
        },
      })
      .input(publishInput)
      .output(messageResponse)
      .mutation(() => notImplemented()),
  }),
  kv: router({
    put: authedProcedure
      .meta({
        openapi: {
          method: "PUT",
          path: "/storage/kv/{bucket}",
          tags: ["storage"],
          summary: "Create or update a key-value bucket",
          protect: true,
        },
      })
      .input(putBucketInput)
      .output(messageResponse)
      .mutation(() => notImplemented()),
  }),
});

import { answeringSuccess, messageResponse, success } from "../../schemas.ts";
import { unixSeconds } from "../../time.ts";
import { operations, router } from "../../trpc.ts";
import { storageErrors } from "../errors.ts";
import { MAX_JSON_BYTES } from "../limits.ts";
import { KEY_RULE } from "../names.ts";
import { deleteBucket, findBucket, putBucket } from "./buckets.ts";
import { deleteKey, getKey, listKeys, putKey } from "./keys.ts";
import {
  bucket,
  bucketInput,
  keyEntry,
  keyInput,
  keysPage,
  listKeysInput,
  putBucketInput,
  putKeyInput,
  putKeyResult,
} from "./schemas.ts";

const op = operations(["storage"]);

const keysRouter = router({
  put: op
    .authed({
      method: "PUT",
      path: "/storage/kv/{bucket}/keys/{key}",
      summary: "Write a key",
      description: `Writes \`value\` (any JSON, up to ${MAX_JSON_BYTES} bytes as JSON: 413 \`payload_too_large\` beyond) under the key, in a bucket that must exist (\`PUT /storage/kv/{bucket}\` first; 404 \`not_found\` otherwise). Keys: ${KEY_RULE}. \`ttl_s\`: seconds until the key expires. \`revision\`: compare-and-set (0 = only if absent), 409 \`conflict\` when the key is at another revision, which \`X-Current-Revision\` names. Answers the new revision. The \`kv.keys\` metric counts keys written without a TTL.`,
      errorResponses: {
        ...storageErrors,
        409: "`conflict`: the key is not at `revision` (see `X-Current-Revision`)",
        413: "`payload_too_large`: value over 1 MiB of JSON",
      },
    })
    .input(putKeyInput)
    .output(putKeyResult)
    .mutation(async ({ ctx, input }) => {
      const { bucket: name, key, ...write } = input;
      return { ...success, revision: await putKey(ctx.services, ctx.principal.accountId, name, key, write) };
    }),

  get: op
    .authed({
      method: "GET",
      path: "/storage/kv/{bucket}/keys/{key}",
      summary: "Read a key",
      description: `The key's value as written, its revision and \`modified\` (Unix seconds). An expired key is \`not_found\`.`,
      errorResponses: storageErrors,
    })
    .input(keyInput)
    .output(keyEntry)
    .query(({ ctx, input }) => getKey(ctx.services, ctx.principal.accountId, input.bucket, input.key)),

  delete: op
    .authed({
      method: "DELETE",
      path: "/storage/kv/{bucket}/keys/{key}",
      summary: "Delete a key",
      description: `404 \`not_found\` when the key does not exist or has expired.`,
      errorResponses: storageErrors,
    })
    .input(keyInput)
    .output(messageResponse)
    .mutation(
      answeringSuccess(({ ctx, input }) => deleteKey(ctx.services, ctx.principal.accountId, input.bucket, input.key)),
    ),

  list: op
    .authed({
      method: "GET",
      path: "/storage/kv/{bucket}/keys",
      summary: "List a bucket's keys",
      description: `Live keys in byte order, optionally only those starting with \`prefix\`, at most \`limit\` per page. Pass \`next\` back as \`cursor\`; \`next\` is null on the last page.`,
      errorResponses: storageErrors,
    })
    .input(listKeysInput)
    .output(keysPage)
    .query(({ ctx, input }) => {
      const { bucket: name, ...query } = input;
      return listKeys(ctx.services, ctx.principal.accountId, name, query);
    }),
});

export const kvRouter = router({
  put: op
    .authed({
      method: "PUT",
      path: "/storage/kv/{bucket}",
      summary: "Create a key-value bucket or update its description",
      description: `A bucket must exist before keys are written to it. Bucket names are unique per account.`,
      errorResponses: storageErrors,
    })
    .input(putBucketInput)
    .output(messageResponse)
    .mutation(
      answeringSuccess(({ ctx, input }) =>
        putBucket(ctx.services, ctx.principal.accountId, input.bucket, input.description),
      ),
    ),

  get: op
    .authed({
      method: "GET",
      path: "/storage/kv/{bucket}",
      summary: "Read a bucket",
      description: `Its name, description, and \`created\` and \`modified\` in Unix seconds.`,
      errorResponses: storageErrors,
    })
    .input(bucketInput)
    .output(bucket)
    .query(async ({ ctx, input }) => {
      const row = await findBucket(ctx.services, ctx.principal.accountId, input.bucket);
      return {
        name: row.name,
        description: row.description,
        created: unixSeconds(row.created_at),
        modified: unixSeconds(row.modified_at),
      };
    }),

  delete: op
    .authed({
      method: "DELETE",
      path: "/storage/kv/{bucket}",
      summary: "Delete a bucket and its keys",
      description: `A bucket created again under the same name starts empty.`,
      errorResponses: storageErrors,
    })
    .input(bucketInput)
    .output(messageResponse)
    .mutation(answeringSuccess(({ ctx, input }) => deleteBucket(ctx.services, ctx.principal.accountId, input.bucket))),

  keys: keysRouter,
});

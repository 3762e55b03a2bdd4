import { answeringSuccess, messageResponse } from "../../schemas.ts";
import { operations, router } from "../../trpc.ts";
import { storageErrors } from "../errors.ts";
import { MAX_JSON_BYTES } from "../limits.ts";
import { deleteStream, putStream } from "./definitions.ts";
import { MAX_SCANNED_PER_READ, publish, readMessages } from "./messages.ts";
import { messagesPage, publishInput, putStreamInput, readMessagesInput } from "./schemas.ts";

const op = operations(["storage"]);

export const streamsRouter = router({
  put: op
    .authed({
      method: "PUT",
      path: "/storage/streams/{name}",
      summary: "Create a stream or replace its settings",
      description: `Creates the stream, or replaces the settings of the account's stream of that name (a setting left out means no limit). Retention: \`max_messages\` keeps the newest messages, \`max_age_s\` drops older ones (seconds). A lowered limit applies at once. Stream names are unique per account.`,
      errorResponses: storageErrors,
    })
    .input(putStreamInput)
    .output(messageResponse)
    .mutation(
      answeringSuccess(({ ctx, input: { name, ...settings } }) =>
        putStream(ctx.services, ctx.principal.accountId, name, settings),
      ),
    ),

  publish: op
    .authed({
      method: "POST",
      path: "/storage/streams/{name}/messages",
      summary: "Publish a message to a stream",
      description: `Appends \`{subject, body}\` to the stream, which must exist (\`PUT /storage/streams/{name}\` first; 404 \`not_found\` otherwise). \`stream\` must repeat the path's name (400 otherwise). Messages are numbered 1, 2, 3, ... per stream (\`seq\`). A body over ${MAX_JSON_BYTES} bytes of JSON is 413 \`payload_too_large\`. Counts \`stream.messages\` and \`stream.bytes\` (the body's JSON bytes) for the stream.`,
      errorResponses: { ...storageErrors, 413: "`payload_too_large`: body over 1 MiB of JSON" },
    })
    .input(publishInput)
    .output(messageResponse)
    .mutation(
      answeringSuccess(({ ctx, input: { name, ...message } }) =>
        publish(ctx.services, ctx.principal.accountId, name, message),
      ),
    ),

  list: op
    .authed({
      method: "GET",
      path: "/storage/streams/{name}/messages",
      summary: "Read a stream's messages",
      description: `Messages in \`seq\` order after \`after\`, at most \`limit\`, optionally only those whose subject matches \`subject\`. \`ts\` is in Unix milliseconds. Pass \`next\` back as \`after\` for the following page; \`next\` is null when the stream held nothing more. A read looks at no more than ${MAX_SCANNED_PER_READ} messages, so a rare filter may answer a short or empty page with a \`next\` to continue from. Messages past the stream's retention are never returned.`,
      errorResponses: storageErrors,
    })
    .input(readMessagesInput)
    .output(messagesPage)
    .query(({ ctx, input }) => {
      const { name, ...query } = input;
      return readMessages(ctx.services, ctx.principal.accountId, name, query);
    }),

  delete: op
    .authed({
      method: "DELETE",
      path: "/storage/streams/{name}",
      summary: "Delete a stream and its messages",
      description: `A stream created again under the same name starts empty, at \`seq\` 1. The stream's metrics stay (they are totals).`,
      errorResponses: storageErrors,
    })
    .input(readMessagesInput.pick({ name: true }))
    .output(messageResponse)
    .mutation(answeringSuccess(({ ctx, input }) => deleteStream(ctx.services, ctx.principal.accountId, input.name))),
});

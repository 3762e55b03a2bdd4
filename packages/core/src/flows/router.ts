import { z } from "zod";
import { answeringSuccess, flowTooLarge, messageResponse, withCredential } from "../schemas.ts";
import { operations, router } from "../trpc.ts";
import { checkFlow } from "./check.ts";
import { createFlow, deleteFlow, getFlow, listFlows, regenerateWebhook, updateFlow } from "./flows.ts";
import { createFlowInput, flow, flowIdInput, flowOutput, updateFlowInput } from "./schemas.ts";

const op = operations(["flows"]);

const saveRules = [
  "Body: `name` (1-200 characters), `description` (at most 2000, default empty), `active` (default true), `trigger`, `steps` (1-100).",
  "`trigger`: `type` `webhook` (the only one), `events` (empty = every event), `response_mode` `acknowledge` (default) or `wait`, `access` `public` (default), `api_key` or `signature`; with `signature`, `service` (`stripe`, `github`, `slack`, `shopify`, `twilio`, `standard`, `custom`) and `signing_secret` (write-only, sealed at rest; Stripe and Standard Webhooks secrets must have their provider's format); `custom` takes `hmac` `{header, algorithm, encoding, prefix?, timestamp_header?, tolerance_s?}`. `delivery_id_field`: a body path holding the delivery id, for services that define none. Unknown trigger fields are refused.",
  "A `schedule` trigger (`cron`, `timezone`, `catch_up`) saved active counts against the account's plan: 409 past `schedules` (flows with an active schedule), 400 naming `trigger.cron` past `schedule_interval_seconds` (the shortest time its next 100 ticks come apart); each with the limit in `limit` (`GET /accounts/usage`). Saving a flow inactive is never refused for them.",
  '`steps`: each `{name, node: "nodes.<id>"}` (a node template of this account, copied into the revision as it is when the flow is saved) or `{name, node_type: "function", subject, payload, options}`; inline `options` default to timeout 30000 ms, attempts 1, backoff_ms 1000 (node templates keep their own).',
  "400s name the field: an unknown subject, a node reference to no node of the account, a duplicate step name, a `{{steps.<name>}}` naming no earlier step (itself or a later one included), a malformed template. `{{secrets.<key>}}` is resolved when the step runs, so a secret may be written after the flow; saving such a reference (inline, or in a node template the flow copies) needs the right to read that secret, so an API key must be allowed `GET /secrets/<key>`, else 403 naming it.",
  '`mcp.call` steps (`payload`: `server` an http(s) URL or `{"registry": "<server name in the MCP registry mirror>"}`, `tool`, `arguments`, `headers`) call a tool of a remote MCP server over Streamable HTTP. When a step\'s server, tool and headers hold no templates (headers may use `{{secrets.<key>}}`), the save asks the server for its tools (`tools/list`, through the address guard, up to 5 s): an unknown tool, or an argument without templates that does not fit the tool\'s input schema, is a 400 naming the field (`steps.0.payload.arguments.a`). A server that does not answer at save is not an error: the check is skipped, and the arguments are checked when the step runs.',
  "`mcp` (optional; null or absent: none) offers the flow as a tool of the account's MCP endpoint `POST /mcp` (Streamable HTTP; see docs/guide/mcp.md): `{tool, description, input_schema, output_schema?}`. `tool` matches `^[a-zA-Z0-9_-]{1,64}$` and is unique among the account's flows (another flow's is 409 naming `mcp.tool`; a deleted flow gives its name back); the schemas are object schemas of JSON Schema 2020-12 (draft-07 when `$schema` says so), at most 32,768 bytes each, compiled at save: an invalid one is 400 naming the field.",
  "Every save writes a new immutable revision (`revision` counts from 1); runs keep the revision they were accepted under. Revisions are kept for good and count against the plan's `flow_revision_bytes` (trigger, steps and settings as JSON, deleted flows' too): a save past it is 413 naming the limit (`GET /accounts/usage`).",
].join("\n\n");

const idRule =
  "An id that is not a UUID is 400 `invalid input: id: must be a UUID`; a flow the account does not have, or deleted, is 404 `flow not found`.";

export const flowsRouter = router({
  create: op
    .definition({
      method: "POST",
      path: "/flows",
      summary: "Create a flow",
      description: `Answers \`{data: Flow}\` with its id and its webhook \`{id, url}\` (\`{webhook_url}/<id>\`).\n\n${saveRules}`,
      errorResponses: { ...withCredential, ...flowTooLarge },
    })
    .input(createFlowInput)
    .output(flowOutput)
    .mutation(async ({ ctx, input }) => ({
      data: await createFlow(ctx.services, ctx.principal, input),
    })),

  validate: op
    .authed({
      method: "POST",
      path: "/flows/validate",
      summary: "Check a flow draft without saving it",
      description:
        "Takes the body `POST /flows` would (with `id`: the body of `PUT /flows/{id}`, whose signing secret may be left out) and answers `{data: {valid, problems}}`: every problem saving it would refuse, each with the `path` of the field (`steps.2.payload`; empty for the whole) and its `message`. Saves nothing and answers 200 whatever the draft holds, so an editor can check as its user types.",
      errorResponses: withCredential,
    })
    .input(z.looseObject({}))
    .output(
      z.object({
        data: z.object({
          valid: z.boolean(),
          problems: z.array(z.object({ path: z.string(), message: z.string() })),
        }),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const problems = await checkFlow(ctx.services, ctx.principal, input);
      return { data: { valid: problems.length === 0, problems } };
    }),

  list: op
    .authed({
      method: "GET",
      path: "/flows",
      summary: "List flows",
      description: "The account's flows, oldest first; deleted ones are left out.",
      errorResponses: withCredential,
    })
    .input(z.void())
    .output(z.object({ data: z.array(flow) }))
    .query(async ({ ctx }) => ({ data: await listFlows(ctx.services, ctx.principal.accountId) })),

  get: op
    .authed({
      method: "GET",
      path: "/flows/{id}",
      summary: "Read a flow",
      description: `The flow as last saved: steps as written (node references as \`nodes.<id>\`), never the signing secret. ${idRule}`,
      errorResponses: { ...withCredential, 404: "No such flow" },
    })
    .input(flowIdInput)
    .output(flowOutput)
    .query(async ({ ctx, input }) => ({ data: await getFlow(ctx.services, ctx.principal.accountId, input.id) })),

  update: op
    .definition({
      method: "PUT",
      path: "/flows/{id}",
      summary: "Replace a flow's definition",
      description: `Replaces the whole definition, as on creation (defaults apply again), and writes the next revision; node references are resolved again. The webhook id stays. With \`signature\` access, leaving \`signing_secret\` out keeps the stored one (it must suit the \`service\`); any other access drops it. ${idRule}\n\n${saveRules}`,
      errorResponses: { ...withCredential, 404: "No such flow", ...flowTooLarge },
    })
    .input(updateFlowInput)
    .output(flowOutput)
    .mutation(async ({ ctx, input }) => {
      const { id, ...definition } = input;
      return { data: await updateFlow(ctx.services, ctx.principal, id, definition) };
    }),

  delete: op
    .authed({
      method: "DELETE",
      path: "/flows/{id}",
      summary: "Delete a flow",
      description: `Marks the flow deleted: it answers 404 from then on, and its webhook starts nothing. Runs already accepted finish. ${idRule}`,
      errorResponses: { ...withCredential, 404: "No such flow" },
    })
    .input(flowIdInput)
    .output(messageResponse)
    .mutation(answeringSuccess(({ ctx, input }) => deleteFlow(ctx.services, ctx.principal.accountId, input.id))),

  regenerateWebhook: op
    .authed({
      method: "POST",
      path: "/flows/{id}/webhook/regenerate",
      summary: "Give a flow a new webhook URL",
      description: `A new random webhook id and url; the old url stops working at once. The definition and revision stay. Answers \`{data: Flow}\`. ${idRule}`,
      errorResponses: { ...withCredential, 404: "No such flow" },
    })
    .input(flowIdInput)
    .output(flowOutput)
    .mutation(async ({ ctx, input }) => ({
      data: await regenerateWebhook(ctx.services, ctx.principal.accountId, input.id),
    })),
});

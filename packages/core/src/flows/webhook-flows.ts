import type { Database, WebhookTriggerSettings } from "@platform/db";
import { type Kysely, sql } from "kysely";
import { openSealed, type Sealer } from "../sealing.ts";
import type { DefinitionCache } from "../storage/definition-cache.ts";

/** What the webhook ingress needs to take a delivery: whose flow it is, how it is secured, what runs. */
export interface WebhookFlow {
  accountId: string;
  flowId: string;
  /** An inactive flow exists but starts no runs; the ingress decides how to answer. */
  active: boolean;
  /** The current revision: a run started now runs this one. */
  revision: number;
  trigger: WebhookTriggerSettings;
  /** The signing secret in clear; null unless `trigger.access` is `signature`. */
  signingSecret: string | null;
}

/** What a flow's signing secret is sealed for: a sealed value copied to another flow does not open there. */
export const flowSecretSealingContext = (flowId: string) => `flow-signing-secret:${flowId}`;

/** The key flows are kept under in the definition cache: webhook ids are unique across accounts. */
export const webhookCacheKey = (webhookId: string) => ["webhook", "", webhookId] as const;

/**
 * The flow a webhook id belongs to, or null when no flow has it (never had, regenerated
 * away, or deleted). One lookup by a unique index, kept in the process's definition cache
 * when one is given (every save, deletion and regeneration drops it in every process). A
 * secret that no listed key opens is an internal error, never a silently unsigned flow.
 */
export async function findFlowByWebhookId(
  deps: { db: Kysely<Database>; sealer: Sealer; storageDefinitions?: DefinitionCache },
  webhookId: string,
): Promise<WebhookFlow | null> {
  const load = async () => (await loadWebhookFlow(deps, webhookId)) ?? undefined;
  const found = deps.storageDefinitions
    ? await deps.storageDefinitions.get(...webhookCacheKey(webhookId), load)
    : await load();
  return found ?? null;
}

async function loadWebhookFlow(
  deps: { db: Kysely<Database>; sealer: Sealer },
  webhookId: string,
): Promise<WebhookFlow | null> {
  const row = await deps.db
    .selectFrom("flows")
    .select(["id", "account_id", "active", "revision", "trigger", "signing_secret"])
    .where("webhook_id", "=", webhookId)
    .where("deleted_at", "is", null)
    // A flow whose trigger is a schedule or manual has no webhook that answers.
    .where(sql<boolean>`trigger ->> 'type' = 'webhook'`)
    .executeTakeFirst();
  if (!row) return null;
  const { trigger } = row;
  // The query left other triggers out; this check tells the type.
  if (trigger.type !== "webhook") return null;
  const signingSecret =
    row.signing_secret === null
      ? null
      : openSealed(
          deps.sealer,
          row.signing_secret,
          flowSecretSealingContext(row.id),
          `signing secret of flow ${row.id}`,
        );
  return {
    accountId: row.account_id,
    flowId: row.id,
    active: row.active,
    revision: row.revision,
    trigger,
    signingSecret,
  };
}

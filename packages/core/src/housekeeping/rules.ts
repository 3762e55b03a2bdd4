import type { Database } from "@platform/db";
import { type RawBuilder, sql } from "kysely";

type Column<Table extends keyof Database> = keyof Database[Table] & string;

/**
 * What housekeeping removes from one table: rows that are expired at `cutoff`. `key` is the
 * table's primary key, one column: batches walk it in order, so a pass reads the table
 * once however many batches it takes. A row expires when its `expiresAt` column is before
 * the cutoff, or when `expired(cutoff)` holds (a condition on the table's own columns).
 */
export type ExpiryRule = {
  [Table in keyof Database]: { table: Table; key: Column<Table> } & (
    | { expiresAt: Column<Table> }
    | { expired: (cutoff: Date) => RawBuilder<unknown> }
  );
}[keyof Database];

/**
 * Every table housekeeping keeps clean, in the order it runs: a new table with an expiry
 * column is one more line. Rows go a grace period after they expire (see housekeeping.ts).
 */
export const EXPIRY_RULES: ExpiryRule[] = [
  // Refresh tokens, spent ones included (kept until they expire to recognise their reuse).
  { table: "refresh_tokens", key: "token_hash", expiresAt: "expires_at" },
  // Sign-in sessions none of whose refresh tokens is still valid (their access tokens have expired too).
  {
    table: "auth_sessions",
    key: "id",
    expired: (cutoff) =>
      sql`not exists (select 1 from refresh_tokens r where r.session_id = auth_sessions.id and r.expires_at >= ${cutoff})`,
  },
  // Password sign-ins waiting for a second factor, with their WebAuthn challenge.
  { table: "mfa_challenges", key: "token_hash", expiresAt: "expires_at" },
  // WebAuthn challenges of passkey registrations.
  { table: "passkey_registrations", key: "user_id", expiresAt: "expires_at" },
  // Invitations nobody accepted in time (an MFA sign-in accepting one goes with it).
  { table: "invitations", key: "id", expiresAt: "expires_at" },
  // Password reset links nobody used in time.
  { table: "password_resets", key: "token_hash", expiresAt: "expires_at" },
  // Rate-limit tallies of keys that took no start in their last 256 buckets (four periods):
  // a start judged later finds its key's tally made again, counting the older ones one by one.
  {
    table: "rate_limit_tallies",
    key: "id",
    expired: (cutoff) =>
      sql`not exists (select 1 from rate_limit_tally_buckets b where b.tally_id = rate_limit_tallies.id
        and b.bucket >= ${cutoff.getTime()}::bigint / rate_limit_tallies.width_ms - 256)`,
  },
];

import type { ColumnType, Insertable, Selectable, Updateable } from "kysely";

/** A timestamp the database fills in: optional on insert, a Date when read. */
type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;

export type Role = "owner" | "admin" | "member";

export interface AccountsTable {
  id: string;
  name: string;
  display_name: string;
  root_email: string;
  plan: ColumnType<string, string | undefined, string>;
  created_at: CreatedAt;
}

export interface UsersTable {
  id: string;
  /** Always stored lower-cased; unique across the platform. */
  email: string;
  password_hash: string;
  display_name: string;
  created_at: CreatedAt;
}

export interface MembershipsTable {
  account_id: string;
  user_id: string;
  role: Role;
  created_at: CreatedAt;
}

/** A sign-in: one refresh-token family. Revoking it ends its access tokens too. */
export interface AuthSessionsTable {
  id: string;
  account_id: string;
  user_id: string;
  created_at: CreatedAt;
  revoked_at: Date | null;
}

/** Refresh tokens, stored only as SHA-256 hashes; a rotated one is kept to recognise its reuse. */
export interface RefreshTokensTable {
  token_hash: string;
  session_id: string;
  account_id: string;
  user_id: string;
  expires_at: Date;
  rotated_at: Date | null;
  created_at: CreatedAt;
}

/** A password login waiting for its second factor; the MFA token is stored as a hash. */
export interface MfaChallengesTable {
  token_hash: string;
  account_id: string;
  user_id: string;
  webauthn_challenge: string | null;
  expires_at: Date;
  created_at: CreatedAt;
}

export interface UserTotpTable {
  user_id: string;
  /** Base32. */
  secret: string;
  /** Null while the setup waits for its first code. */
  enabled_at: Date | null;
  /** The TOTP time step of the last accepted code; a code is accepted once. */
  last_used_step: number | null;
  created_at: CreatedAt;
}

export interface PasskeysTable {
  /** The WebAuthn credential id, base64url. */
  id: string;
  user_id: string;
  /** The COSE public key, base64url. */
  public_key: string;
  counter: ColumnType<number, number | undefined, number>;
  transports: ColumnType<string[], string, string>;
  device_type: string;
  backed_up: boolean;
  created_at: CreatedAt;
  last_used_at: Date | null;
}

export interface PasskeyRegistrationsTable {
  user_id: string;
  challenge: string;
  expires_at: Date;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  created_by: string;
  name: string;
  /** The first characters of the key, shown in listings. */
  prefix: string;
  key_hash: string;
  /** Path patterns (`*` as suffix wildcard); null = unrestricted. Written as a JSON string. */
  allowed_paths: ColumnType<string[] | null, string | null, string | null>;
  created_at: CreatedAt;
}

/** A secret of an account; `value` is sealed (see packages/core/src/sealing.ts), never the plaintext. */
export interface SecretsTable {
  account_id: string;
  key: string;
  value: string;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

/** A node template; `payload` is JSON whose strings may hold `{{...}}` template references. */
export interface NodeTemplatesTable {
  /** A UUID. */
  id: string;
  account_id: string;
  collection: string;
  name: string;
  description: string;
  node_type: string;
  subject: string;
  /** Written as a JSON string. */
  payload: ColumnType<Record<string, unknown>, string, string>;
  timeout_ms: number;
  attempts: number;
  backoff_ms: number;
  created_at: CreatedAt;
  updated_at: CreatedAt;
}

/** A flow: a webhook trigger and ordered steps; the definition that runs is in `flow_revisions`. */
export interface FlowsTable {
  /** A UUID. */
  id: string;
  account_id: string;
  name: string;
  description: string;
  active: boolean;
  /** The trigger as saved, without its signing secret. Written as a JSON string. */
  trigger: ColumnType<Record<string, unknown>, string, string>;
  /** Sealed; never returned. */
  signing_secret: string | null;
  webhook_id: string;
  revision: number;
  created_at: CreatedAt;
  modified_at: CreatedAt;
  deleted_at: Date | null;
}

/** One immutable saved definition of a flow. */
export interface FlowRevisionsTable {
  flow_id: string;
  revision: number;
  /** Written as JSON strings. */
  trigger: ColumnType<Record<string, unknown>, string, string>;
  steps: ColumnType<Record<string, unknown>[], string, string>;
  created_at: CreatedAt;
}

export interface Database {
  accounts: AccountsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  auth_sessions: AuthSessionsTable;
  refresh_tokens: RefreshTokensTable;
  mfa_challenges: MfaChallengesTable;
  user_totp: UserTotpTable;
  passkeys: PasskeysTable;
  passkey_registrations: PasskeyRegistrationsTable;
  api_keys: ApiKeysTable;
  secrets: SecretsTable;
  node_templates: NodeTemplatesTable;
  flows: FlowsTable;
  flow_revisions: FlowRevisionsTable;
}

export type Account = Selectable<AccountsTable>;
export type NewAccount = Insertable<AccountsTable>;
export type AccountUpdate = Updateable<AccountsTable>;
export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type Membership = Selectable<MembershipsTable>;
export type NewMembership = Insertable<MembershipsTable>;

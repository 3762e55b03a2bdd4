import type { ColumnType, Insertable, Selectable, Updateable } from "kysely";

/** A timestamp the database fills in: optional on insert, a Date when read. */
type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;

export type Role = "owner" | "admin" | "member";

export interface AccountsTable {
  id: string;
  name: string;
  display_name: string;
  root_email: string;
  plan: string;
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

export interface Database {
  accounts: AccountsTable;
  users: UsersTable;
  memberships: MembershipsTable;
}

export type Account = Selectable<AccountsTable>;
export type NewAccount = Insertable<AccountsTable>;
export type AccountUpdate = Updateable<AccountsTable>;
export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type Membership = Selectable<MembershipsTable>;
export type NewMembership = Insertable<MembershipsTable>;

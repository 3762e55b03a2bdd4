import type { TokenSource } from "@platform/client";

/** What a sign-in answers, less the refresh token, which the console never keeps. */
export interface SignedIn {
  auth_token: string;
  passkey_enabled: boolean;
  totp_enabled: boolean;
  account: { id: string; name: string; display_name: string; root_email: string; subscription_status: string };
}

type Listener = (state: SignedIn | null) => void;

/** Renew this long before the access token expires. */
const MARGIN_MS = 30_000;

function expiryOf(token: string): number {
  try {
    const part = token.split(".")[1] ?? "";
    const claims = JSON.parse(atob(part.replace(/-/g, "+").replace(/_/g, "/"))) as { exp?: number };
    return typeof claims.exp === "number" ? claims.exp * 1000 : Number.POSITIVE_INFINITY;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

export class SignedOutError extends Error {
  constructor() {
    super("not signed in");
    this.name = "SignedOutError";
  }
}

/**
 * The console's sign-in. The access token is held in this object only (never in storage
 * script on another page could read); the refresh token is handed once to
 * `POST /console/session`, which keeps it in an HttpOnly cookie, and forgotten. Renewals
 * go through `POST /console/session/refresh`, one at a time across every tab of the
 * console (a Web Lock), so a single-use refresh token is never presented twice.
 */
export class ConsoleSession implements TokenSource {
  private state: SignedIn | null = null;
  private expiresAt = 0;
  private renewal: Promise<string> | undefined;
  private readonly listeners = new Set<Listener>();
  private readonly expiryListeners = new Set<() => void>();

  get current(): SignedIn | null {
    return this.state;
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Called when a held session stops working (ended elsewhere, expired): not on signing out. */
  onExpired(listener: () => void): () => void {
    this.expiryListeners.add(listener);
    return () => this.expiryListeners.delete(listener);
  }

  /** Keeps a fresh sign-in: the refresh token goes to the cookie, the rest stays here. */
  async signedIn(result: SignedIn & { refresh_token: string }): Promise<void> {
    const { refresh_token, ...rest } = result;
    const response = await fetch("/console/session", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ refresh_token }),
    });
    if (!response.ok) throw new Error(`could not keep the session (${response.status})`);
    this.hold(rest);
  }

  /** Resumes the session the cookie holds (a reload, a new tab); false when there is none. */
  async resume(): Promise<boolean> {
    try {
      await this.renew();
      return true;
    } catch (error) {
      if (error instanceof SignedOutError) return false;
      throw error;
    }
  }

  async signOut(): Promise<void> {
    const token = this.state?.auth_token;
    this.set(null);
    await fetch("/console/session/end", {
      method: "POST",
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
  }

  async accessToken(): Promise<string> {
    if (this.state && Date.now() < this.expiresAt - MARGIN_MS) return this.state.auth_token;
    return this.renew();
  }

  async afterRefusal(refused: string): Promise<string> {
    if (this.state && this.state.auth_token !== refused) return this.state.auth_token;
    return this.renew();
  }

  private renew(): Promise<string> {
    this.renewal ??= this.exchange().finally(() => {
      this.renewal = undefined;
    });
    return this.renewal;
  }

  private async exchange(): Promise<string> {
    const send = () => fetch("/console/session/refresh", { method: "POST" });
    const response = navigator.locks ? await navigator.locks.request("console-session", send) : await send();
    if (response.status === 401) {
      const held = this.state !== null;
      this.set(null);
      if (held) for (const listener of this.expiryListeners) listener();
      throw new SignedOutError();
    }
    if (!response.ok) throw new Error(`could not renew the session (${response.status})`);
    const { data } = (await response.json()) as { data: SignedIn };
    this.hold(data);
    return data.auth_token;
  }

  private hold(state: SignedIn): void {
    this.expiresAt = expiryOf(state.auth_token);
    this.set(state);
  }

  private set(state: SignedIn | null): void {
    this.state = state;
    for (const listener of this.listeners) listener(state);
  }
}

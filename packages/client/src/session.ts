import { errorFromResponse, networkError, PlatformError } from "./errors.ts";

/** The tokens of a sign-in, as `onTokens` hands them over for the caller to keep. */
export interface PlatformTokens {
  accessToken: string;
  refreshToken: string;
  /** When the access token expires, in epoch milliseconds (read from the token). */
  accessTokenExpiresAt: number;
}

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** A TOTP code, or a function giving the current one (asked each time the client signs in). */
export type TotpSource = string | (() => string | Promise<string>);

/** Where a signed-in client gets its access tokens: `Session` here, or the caller's own. */
export interface TokenSource {
  /** A token to send. */
  accessToken(): Promise<string>;
  /** A token to send after the server refused `refused` (401): a renewed one. */
  afterRefusal(refused: string): Promise<string>;
}

export interface SessionOptions {
  baseUrl: string;
  fetch: Fetch;
  now: () => number;
  onTokens?: (tokens: PlatformTokens) => void | Promise<void>;
  /** Signs in again when the refresh token is refused (e.g. it expired). */
  password?: { email: string; password: string; totp?: TotpSource };
  refreshToken?: string;
  accessToken?: string;
}

/** Refresh this long before expiry, at most: 30 s, or a tenth of a short token's life. */
const MAX_MARGIN_MS = 30_000;

interface Held {
  accessToken: string;
  refreshToken: string;
  expiresAt: number;
  /** Renew from this time on. */
  renewAt: number;
}

/** The `exp` and `iat` claims of a JWT, read without verifying it (the server does that). */
function claimsOf(token: string): { exp?: number; iat?: number } {
  try {
    const part = token.split(".")[1] ?? "";
    const base64 = part
      .replace(/-/g, "+")
      .replace(/_/g, "/")
      .padEnd(Math.ceil(part.length / 4) * 4, "=");
    return JSON.parse(atob(base64)) as { exp?: number; iat?: number };
  } catch {
    return {};
  }
}

function hold(accessToken: string, refreshToken: string, now: number): Held {
  const { exp, iat } = claimsOf(accessToken);
  // A token whose expiry cannot be read is used until the server refuses it.
  if (typeof exp !== "number") return { accessToken, refreshToken, expiresAt: Infinity, renewAt: Infinity };
  const expiresAt = exp * 1000;
  const lifetime = typeof iat === "number" ? expiresAt - iat * 1000 : expiresAt - now;
  const margin = Math.min(MAX_MARGIN_MS, Math.max(0, lifetime / 10));
  return { accessToken, refreshToken, expiresAt, renewAt: expiresAt - margin };
}

interface AuthResult {
  auth_token: string;
  refresh_token: string;
}

type SignInAnswer = AuthResult | { mfa_required: true; mfa_token: string; methods: string[] };

/**
 * The access token of a signed-in client: it signs in (or refreshes) when it has none,
 * renews it shortly before it expires and once when the server refuses it. Renewals are
 * single-flight: however many calls wait, one refresh request is made, so refresh-token
 * rotation never sees the same token twice (which would end the session).
 */
export class Session implements TokenSource {
  private held: Held | undefined;
  private refreshToken: string | undefined;
  private renewal: Promise<string> | undefined;

  constructor(private readonly options: SessionOptions) {
    this.refreshToken = options.refreshToken;
    if (options.accessToken && options.refreshToken) {
      this.held = hold(options.accessToken, options.refreshToken, options.now());
    }
  }

  /** A token to send: the one held while it is fresh, else a renewed one. */
  async accessToken(): Promise<string> {
    const held = this.held;
    if (held && this.options.now() < held.renewAt) return held.accessToken;
    return this.renew();
  }

  /** After the server refused `refused`: renew, unless another call already replaced it. */
  async afterRefusal(refused: string): Promise<string> {
    const held = this.held;
    if (held && held.accessToken !== refused) return held.accessToken;
    return this.renew();
  }

  private renew(): Promise<string> {
    this.renewal ??= this.obtain().finally(() => {
      this.renewal = undefined;
    });
    return this.renewal;
  }

  private async obtain(): Promise<string> {
    let result: AuthResult;
    if (this.refreshToken) {
      try {
        result = await this.refresh(this.refreshToken);
      } catch (error) {
        // A refused refresh token (expired, revoked) is replaced by signing in again, when we can.
        if (!(error instanceof PlatformError && error.status === 401 && this.options.password)) throw error;
        result = await this.signIn(this.options.password);
      }
    } else if (this.options.password) {
      result = await this.signIn(this.options.password);
    } else {
      throw new PlatformError("no credential to sign in with", { status: 401, code: "unauthorized", requestId: null });
    }
    const held = hold(result.auth_token, result.refresh_token, this.options.now());
    this.held = held;
    this.refreshToken = held.refreshToken;
    await this.options.onTokens?.({
      accessToken: held.accessToken,
      refreshToken: held.refreshToken,
      accessTokenExpiresAt: held.expiresAt,
    });
    return held.accessToken;
  }

  private async post<T>(path: string, body: unknown): Promise<T> {
    let response: Response;
    try {
      response = await this.options.fetch(`${this.options.baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    } catch (error) {
      throw networkError(error);
    }
    if (!response.ok) throw await errorFromResponse(response);
    return ((await response.json()) as { data: T }).data;
  }

  private refresh(refreshToken: string): Promise<AuthResult> {
    return this.post<AuthResult>("/accounts/refresh", { refresh_token: refreshToken });
  }

  private async signIn(credentials: NonNullable<SessionOptions["password"]>): Promise<AuthResult> {
    const { email, password, totp } = credentials;
    const answer = await this.post<SignInAnswer>("/accounts/auth-with-password", { email, password });
    if (!("mfa_required" in answer)) return answer;
    if (!totp || !answer.methods.includes("totp")) {
      throw new PlatformError(`a second factor is required (${answer.methods.join(", ")}): pass totp`, {
        status: 401,
        code: "unauthorized",
        requestId: null,
      });
    }
    const code = typeof totp === "function" ? await totp() : totp;
    return this.post<AuthResult>("/accounts/auth-with-mfa", { mfa_token: answer.mfa_token, totp_code: code });
  }
}

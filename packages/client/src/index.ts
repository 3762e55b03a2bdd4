import { createTRPCClient, type HTTPLinkOptions, httpLink, type TRPCClient, type TRPCLink } from "@trpc/client";
import { observable } from "@trpc/server/observable";
import type { AppRouter } from "./app-router.ts";
import { networkError, toPlatformError } from "./errors.ts";
import { type Fetch, type PlatformTokens, Session, type TokenSource, type TotpSource } from "./session.ts";

export type { AppRouter } from "./app-router.ts";
export {
  FINAL_RUN_STATUSES,
  GATEWAY_METHODS,
  type GatewayMethod,
  isFinalRunStatus,
  RUN_STATUSES,
  type RunStatus,
  WEBHOOK_SERVICES,
  type WebhookService,
} from "./enums.ts";
export { PlatformError, type Problem } from "./errors.ts";
export type { RouterInputs, RouterOutputs } from "./router-io.ts";
export type { Fetch, PlatformTokens, TokenSource, TotpSource } from "./session.ts";

/** Settings every way of signing in shares. */
export interface PlatformClientBase {
  /** The API's address, e.g. `https://platform.example.com` (tRPC is served under `/trpc`). */
  url: string;
  /**
   * Called with the new tokens after each sign-in and refresh, before the call that needed
   * them goes on: keep `refreshToken` to start the next client from it. Refresh tokens are
   * single-use, so always keep the latest.
   */
  onTokens?: (tokens: PlatformTokens) => void | Promise<void>;
  /** The fetch to use (default: the global one). */
  fetch?: Fetch;
  /** The clock access tokens are judged by, in epoch milliseconds (default `Date.now`). */
  now?: () => number;
}

/**
 * How the client proves who it is: not at all (the open procedures: sign-up, sign-in,
 * password reset, invitations), an API key, a password (with a TOTP code if enrolled), a
 * kept refresh token, or a source of access tokens the caller runs itself (a browser app
 * whose refresh token lives in an HttpOnly cookie).
 */
export type PlatformCredentials =
  | { anonymous: true }
  | { apiKey: string }
  | { tokens: TokenSource }
  | { email: string; password: string; totp?: TotpSource }
  | { refreshToken: string; accessToken?: string };

export type PlatformClientOptions = PlatformClientBase & PlatformCredentials;

/** The typed client: `client.secrets.put.mutate({ key, value })`, `client.secrets.list.query()`, … */
export type PlatformClient = TRPCClient<AppRouter>;

/** Turns every failure into a PlatformError (status, message, request id). */
const platformErrors: TRPCLink<AppRouter> =
  () =>
  ({ op, next }) =>
    observable((observer) =>
      next(op).subscribe({
        next: (value) => observer.next(value),
        error: (error) => observer.error(toPlatformError(error)),
        complete: () => observer.complete(),
      }),
    );

function withHeader(init: RequestInit | undefined, name: string, value: string): RequestInit {
  const headers = new Headers(init?.headers);
  headers.set(name, value);
  return { ...init, headers };
}

/** Creates a client for the platform's tRPC API; nothing is sent until the first call. */
export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const baseUrl = options.url.replace(/\/+$/, "");
  const baseFetch: Fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const send: Fetch = async (input, init) => {
    try {
      return await baseFetch(input, init);
    } catch (error) {
      throw networkError(error);
    }
  };

  let authedFetch: Fetch;
  if ("anonymous" in options) {
    authedFetch = send;
  } else if ("apiKey" in options) {
    const { apiKey } = options;
    authedFetch = (input, init) => send(input, withHeader(init, "x-api-key", apiKey));
  } else {
    const session: TokenSource =
      "tokens" in options
        ? options.tokens
        : new Session({
            baseUrl,
            fetch: send,
            now: options.now ?? Date.now,
            onTokens: options.onTokens,
            ...("refreshToken" in options
              ? { refreshToken: options.refreshToken, accessToken: options.accessToken }
              : { password: { email: options.email, password: options.password, totp: options.totp } }),
          });
    authedFetch = async (input, init) => {
      const token = await session.accessToken();
      const response = await send(input, withHeader(init, "authorization", `Bearer ${token}`));
      if (response.status !== 401) return response;
      // Refused (expired early, clock skew): renew once and try again.
      const renewed = await session.afterRefusal(token);
      return send(input, withHeader(init, "authorization", `Bearer ${renewed}`));
    };
  }

  return createTRPCClient<AppRouter>({
    links: [
      platformErrors,
      httpLink({
        url: `${baseUrl}/trpc`,
        fetch: authedFetch as HTTPLinkOptions<AppRouter["_def"]["_config"]["$types"]>["fetch"],
      }),
    ],
  });
}

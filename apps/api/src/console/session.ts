import { type AppRouter, type Context, DomainError, describeError, invalidInput, type Logger } from "@platform/core";
import { TRPCError } from "@trpc/server";

/**
 * The console's sign-in session, kept as OWASP advises for a single-page app: the access
 * token lives in the page's memory only, the refresh token in an HttpOnly cookie that
 * script cannot read and that is sent to these three routes only (`Path=/console/session`),
 * never to tenants' gateways or webhooks on the same origin. SameSite=Strict and a
 * same-origin check (`Sec-Fetch-Site`, else `Origin`) keep other sites from using it.
 */
export const SESSION_PATH = "/console/session";
const COOKIE = "console_refresh";
const REFRESH_TOKEN = /^[\w.~-]{1,512}$/;

export interface ConsoleSessionOptions {
  router: AppRouter;
  contextOf: (request: Request) => Context;
  /** The deployment's public address: its origin is the console's, and https makes the cookie Secure. */
  publicUrl: string;
  /** How long the cookie is kept: the refresh token's own lifetime. */
  refreshTokenTtlSeconds: number;
  logger: Logger;
}

export interface ConsoleSession {
  /** `POST /console/session {refresh_token}`: keeps a fresh sign-in's refresh token in the cookie. */
  start(request: Request): Promise<Response>;
  /** `POST /console/session/refresh`: rotates the cookie's token, answers the new access token. */
  refresh(request: Request): Promise<Response>;
  /** `POST /console/session/end`: ends the session (with the caller's Bearer token) and drops the cookie. */
  end(request: Request): Promise<Response>;
}

export function createConsoleSession(options: ConsoleSessionOptions): ConsoleSession {
  const publicOrigin = new URL(options.publicUrl).origin;
  const secure = options.publicUrl.startsWith("https:") ? "; Secure" : "";
  const cookie = (token: string, maxAge: number) =>
    `${COOKIE}=${token}; Path=${SESSION_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure}`;
  const keep = (token: string) => cookie(token, options.refreshTokenTtlSeconds);
  const drop = cookie("", 0);

  /** Only the console's own pages may use the session: other sites' requests are refused. */
  function sameOrigin(request: Request): boolean {
    const site = request.headers.get("sec-fetch-site");
    if (site !== null) return site === "same-origin";
    const origin = request.headers.get("origin");
    return origin === null || origin === publicOrigin || origin === new URL(request.url).origin;
  }

  function kept(request: Request): string | undefined {
    for (const part of (request.headers.get("cookie") ?? "").split(";")) {
      const [name, value] = part.trim().split("=", 2);
      if (name === COOKIE && value && REFRESH_TOKEN.test(value)) return value;
    }
    return undefined;
  }

  function failure(error: unknown, procedure: string, setCookie?: string): Response {
    const trpcError =
      error instanceof TRPCError ? error : new TRPCError({ code: "INTERNAL_SERVER_ERROR", cause: error });
    const described = describeError(trpcError, procedure);
    if (described.code === "internal_error") options.logger.error({ err: error }, "console session failed");
    const headers = new Headers(described.headers);
    if (setCookie) headers.set("set-cookie", setCookie);
    return Response.json(described.body, { status: described.status, headers });
  }

  const refused = () => failure(new DomainError("forbidden", "the console session is for this site's pages only"), "");
  const signedOut = () => failure(new DomainError("unauthorized", "not signed in"), "accounts.refresh", drop);

  return {
    async start(request) {
      if (!sameOrigin(request)) return refused();
      const body = (await request.json().catch(() => undefined)) as { refresh_token?: unknown } | undefined;
      const token = body?.refresh_token;
      if (typeof token !== "string" || !REFRESH_TOKEN.test(token)) {
        return failure(invalidInput({ path: "refresh_token", message: "a refresh token" }), "");
      }
      return new Response(null, { status: 204, headers: { "set-cookie": keep(token) } });
    },

    async refresh(request) {
      if (!sameOrigin(request)) return refused();
      const token = kept(request);
      if (!token) return signedOut();
      try {
        const caller = options.router.createCaller(options.contextOf(request));
        const { data } = await caller.accounts.refresh({ refresh_token: token });
        const { refresh_token, ...rest } = data;
        return Response.json({ data: rest }, { headers: { "set-cookie": keep(refresh_token) } });
      } catch (error) {
        // A refused token will never work again: the cookie goes with it.
        const answer = failure(error, "accounts.refresh");
        if (answer.status === 401) answer.headers.set("set-cookie", drop);
        return answer;
      }
    },

    async end(request) {
      if (!sameOrigin(request)) return refused();
      const token = kept(request);
      if (token && request.headers.has("authorization")) {
        const caller = options.router.createCaller(options.contextOf(request));
        // Ending an already-ended session is not an error to the person signing out.
        await caller.accounts.logout({ refresh_token: token }).catch(() => undefined);
      }
      return new Response(null, { status: 204, headers: { "set-cookie": drop } });
    },
  };
}

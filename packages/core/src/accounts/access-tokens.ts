import { errors, jwtVerify, SignJWT } from "jose";
import { DomainError } from "../errors.ts";
import type { SigningKeyRing } from "./signing-keys.ts";

/** The one algorithm accepted: a token claiming any other (`none` included) is refused. */
const ALGORITHM = "HS256";
const ISSUER = "workflow-platform";
const AUDIENCE = "workflow-platform-api";

/** What an access token asserts: this user, in this account, in this sign-in session. */
export interface AccessTokenClaims {
  userId: string;
  accountId: string;
  sessionId: string;
  /** When the user last proved who they are in this session (OIDC's `auth_time`, Unix seconds). */
  authTime?: number;
}

export interface AccessTokens {
  issue(claims: AccessTokenClaims): Promise<string>;
  /** Throws `unauthorized` for an expired, forged, malformed or foreign token. */
  verify(token: string): Promise<AccessTokenClaims>;
}

export function createAccessTokens(keys: SigningKeyRing, ttlSeconds: number): AccessTokens {
  return {
    issue({ userId, accountId, sessionId, authTime }) {
      return new SignJWT({ acc: accountId, sid: sessionId, ...(authTime !== undefined ? { auth_time: authTime } : {}) })
        .setProtectedHeader({ alg: ALGORITHM, kid: keys.current.kid, typ: "JWT" })
        .setSubject(userId)
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(`${ttlSeconds}s`)
        .sign(keys.current.secret);
    },
    async verify(token) {
      try {
        const { payload } = await jwtVerify(
          token,
          (header) => {
            const key = header.kid ? keys.byKid.get(header.kid) : undefined;
            if (!key) throw new DomainError("unauthorized", "invalid credential");
            return key.secret;
          },
          { algorithms: [ALGORITHM], issuer: ISSUER, audience: AUDIENCE, requiredClaims: ["sub", "exp", "iat"] },
        );
        const { sub, acc, sid, auth_time } = payload;
        if (typeof sub !== "string" || typeof acc !== "string" || typeof sid !== "string") {
          throw new DomainError("unauthorized", "invalid credential");
        }
        return {
          userId: sub,
          accountId: acc,
          sessionId: sid,
          ...(typeof auth_time === "number" ? { authTime: auth_time } : {}),
        };
      } catch (error) {
        if (error instanceof errors.JWTExpired) throw new DomainError("unauthorized", "access token expired");
        throw new DomainError("unauthorized", "invalid credential");
      }
    },
  };
}

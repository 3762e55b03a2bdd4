import { z } from "zod";
import { uuidParam } from "../schemas.ts";
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "./passwords.ts";
import { parseAllowedPath } from "./path-patterns.ts";

// ---- Resources of the spec -------------------------------------------------------------

export const account = z
  .object({
    name: z.string(),
    id: z.string(),
    display_name: z.string(),
    root_email: z.string(),
    subscription_status: z.string().meta({ description: "The account's plan, e.g. `free`." }),
  })
  .meta({ id: "Account" });

export type AccountView = z.infer<typeof account>;

export const authResult = z
  .object({
    refresh_token: z.string(),
    auth_token: z.string().meta({ description: "A JWT, sent as `Authorization: Bearer`." }),
    passkey_enabled: z.boolean(),
    totp_enabled: z.boolean(),
    account,
  })
  .meta({ id: "AuthResult" });

export type AuthResult = z.infer<typeof authResult>;

export const mfaMethod = z.enum(["totp", "passkey"]);
export type MfaMethod = z.infer<typeof mfaMethod>;

export const mfaRequired = z
  .object({
    mfa_required: z.literal(true),
    mfa_token: z.string().meta({ description: "Pass to `POST /accounts/auth-with-mfa`; valid for a few minutes." }),
    methods: z.array(mfaMethod),
  })
  .meta({ id: "MfaRequired" });

export type MfaRequired = z.infer<typeof mfaRequired>;

export const price = z
  .object({
    id: z.string(),
    currency: z.string(),
    unit_amount: z.number().int(),
    amount: z.number().int(),
    lookup_key: z.string(),
    nickname: z.string(),
    metadata: z.record(z.string(), z.unknown()),
  })
  .meta({ id: "Price" });

export type Price = z.infer<typeof price>;

// ---- Pieces of requests ----------------------------------------------------------------

/** RFC 5321: an address holds at most 254 characters. Longer input is refused before any lookup. */
const MAX_EMAIL_LENGTH = 254;
/** Refresh and MFA tokens are under 50 characters; anything much longer is not one. */
const MAX_OPAQUE_TOKEN_LENGTH = 256;

const atMost = (max: number) => ({ error: `must be at most ${max} characters` });

/** An email as typed at sign-in: compared lower-cased, only its length validated (an unknown one is a 401). */
const loginEmail = z.string().trim().toLowerCase().min(1).max(MAX_EMAIL_LENGTH, atMost(MAX_EMAIL_LENGTH));

/** An email that is about to be stored. */
const newEmail = z
  .string()
  .trim()
  .toLowerCase()
  .max(MAX_EMAIL_LENGTH, atMost(MAX_EMAIL_LENGTH))
  .pipe(z.email({ error: "must be an email address" }));

const opaqueToken = z.string().min(1).max(MAX_OPAQUE_TOKEN_LENGTH, atMost(MAX_OPAQUE_TOKEN_LENGTH));

const newPassword = z
  .string()
  .min(MIN_PASSWORD_LENGTH, { error: `must be at least ${MIN_PASSWORD_LENGTH} characters` })
  .max(MAX_PASSWORD_LENGTH, atMost(MAX_PASSWORD_LENGTH));

const base64url = z.string().regex(/^[A-Za-z0-9_-]*$/, { error: "must be base64url" });

// ---- Requests and responses ------------------------------------------------------------

export const signupInput = z.object({
  email: newEmail,
  password: newPassword,
  account_name: z.string().trim().min(1).max(200),
  display_name: z.string().trim().min(1).max(200).optional(),
});

export const passwordLoginInput = z.object({
  email: loginEmail,
  password: z.string().min(1).max(MAX_PASSWORD_LENGTH, atMost(MAX_PASSWORD_LENGTH)),
});

/** A WebAuthn credential as `@simplewebauthn/browser` returns it: what every ceremony's answer carries around its `response`. */
const publicKeyCredential = <Response extends z.ZodType>(response: Response) =>
  z.object({
    id: base64url.min(1),
    rawId: base64url.min(1),
    type: z.literal("public-key"),
    response,
    authenticatorAttachment: z.enum(["platform", "cross-platform"]).optional(),
    clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
  });

/** A WebAuthn assertion (`AuthenticationResponseJSON`), as `@simplewebauthn/browser` returns it. */
export const passkeyAssertion = publicKeyCredential(
  z.object({
    clientDataJSON: base64url,
    authenticatorData: base64url,
    signature: base64url,
    userHandle: base64url.optional(),
  }),
).meta({ id: "PasskeyAssertion" });

/** A WebAuthn attestation (`RegistrationResponseJSON`), as `@simplewebauthn/browser` returns it. */
export const passkeyAttestation = publicKeyCredential(
  z.object({
    clientDataJSON: base64url,
    attestationObject: base64url,
    authenticatorData: base64url.optional(),
    transports: z
      .array(z.string().max(32))
      .max(10)
      .optional()
      .meta({ description: "Stored with the passkey and offered back at sign-in: `usb`, `nfc`, `internal`, ..." }),
    publicKeyAlgorithm: z.number().int().optional(),
    publicKey: base64url.optional(),
  }),
).meta({ id: "PasskeyAttestation" });

export const mfaLoginInput = z
  .object({
    mfa_token: opaqueToken,
    totp_code: z
      .string()
      .trim()
      .regex(/^\d{6}$/, { error: "must be 6 digits" })
      .optional(),
    passkey: passkeyAssertion.optional(),
  })
  .refine((input) => (input.totp_code === undefined) !== (input.passkey === undefined), {
    error: "give either totp_code or passkey",
  });

export const mfaTokenInput = z.object({ mfa_token: opaqueToken });

export const refreshTokenInput = z.object({ refresh_token: opaqueToken });

export const totpSetup = z.object({
  secret: z.string().meta({ description: "Base32; the same secret as in `otpauth_url`." }),
  otpauth_url: z.string().meta({ example: "otpauth://totp/Workflow%20Platform:ada%40example.com?..." }),
});

export const totpCodeInput = z.object({
  code: z
    .string()
    .trim()
    .regex(/^\d{6}$/, { error: "must be 6 digits" }),
});

export const passkeyRegistrationInput = z.object({ response: passkeyAttestation });

const credentialDescriptor = z.object({
  id: z.string(),
  type: z.string().meta({ example: "public-key" }),
  transports: z.array(z.string()).optional(),
});

/** `PublicKeyCredentialCreationOptionsJSON`, for `navigator.credentials.create` (e.g. via `@simplewebauthn/browser`). */
export const passkeyCreationOptions = z
  .object({
    challenge: z.string(),
    rp: z.object({ name: z.string(), id: z.string().optional() }),
    user: z.object({ id: z.string(), name: z.string(), displayName: z.string() }),
    pubKeyCredParams: z.array(z.object({ alg: z.number(), type: z.string() })),
    timeout: z.number().optional(),
    excludeCredentials: z.array(credentialDescriptor).optional(),
    authenticatorSelection: z
      .object({
        authenticatorAttachment: z.string().optional(),
        requireResidentKey: z.boolean().optional(),
        residentKey: z.string().optional(),
        userVerification: z.string().optional(),
      })
      .optional(),
    hints: z.array(z.string()).optional(),
    attestation: z.string().optional(),
    extensions: z.unknown().optional(),
  })
  .meta({ id: "PasskeyCreationOptions" });

/** `PublicKeyCredentialRequestOptionsJSON`, for `navigator.credentials.get`. */
export const passkeyRequestOptions = z
  .object({
    challenge: z.string(),
    rpId: z.string().optional(),
    timeout: z.number().optional(),
    allowCredentials: z.array(credentialDescriptor).optional(),
    userVerification: z.string().optional(),
    hints: z.array(z.string()).optional(),
    extensions: z.unknown().optional(),
  })
  .meta({ id: "PasskeyRequestOptions" });

export const emailInput = z.object({ email: loginEmail });

export const memberRole = z.enum(["admin", "member"]);

export const inviteUserInput = z.object({
  email: newEmail,
  role: memberRole,
  password: z
    .never({ error: "is no longer accepted: the invitee sets their own when accepting the invitation" })
    .optional()
    .meta({ description: "Not accepted (400): the invitee sets or proves their password when accepting." }),
});

export const invitation = z.object({
  token: z.string().meta({ description: "Single use; pass it to `POST /accounts/invitations/accept`." }),
  url: z.string().meta({ description: "The link to hand the invitee: `{APP_URL}/invitations/accept#token=...`." }),
  expires: z.number().int().meta({ description: "Unix timestamp in seconds." }),
});

export const invitedUser = z.object({
  email: z.string(),
  role: memberRole,
  status: z.literal("invited"),
  invitation,
});

export const acceptInvitationInput = z.object({
  token: opaqueToken,
  password: z
    .string()
    .min(1)
    .max(MAX_PASSWORD_LENGTH, atMost(MAX_PASSWORD_LENGTH))
    .meta({
      description: `For an email with no user: the new user's password (at least ${MIN_PASSWORD_LENGTH} characters). For an existing user: their current password.`,
    }),
  display_name: z.string().trim().min(1).max(200).optional().meta({ description: "For a new user only." }),
});

export const userEntry = z
  .object({
    email: z.string(),
    role: z.enum(["owner", "admin", "member"]),
    display_name: z.string().meta({ description: "Empty while the invitation is pending." }),
    status: z.enum(["active", "invited"]),
    expires: z
      .number()
      .int()
      .optional()
      .meta({ description: "For a pending invitation: when it expires (Unix seconds)." }),
  })
  .meta({ id: "AccountUser" });

/**
 * An entry of an API key's `allowed_paths`: a path pattern (starting with `/`, ending with
 * `*` for a prefix, no `*` elsewhere) for every method, or methods before it:
 * `GET,PUT /storage/kv/orders/*`.
 */
const pathPattern = z
  .string()
  .min(1)
  .max(500)
  .superRefine((entry, ctx) => {
    const read = parseAllowedPath(entry);
    if (typeof read === "string") ctx.addIssue({ code: "custom", message: read });
  });

export const createApiKeyInput = z.object({
  name: z.string().trim().min(1).max(200),
  allowed_paths: z
    .array(pathPattern)
    .min(1, { error: "must name at least one path, or be left out for an unrestricted key" })
    .max(100)
    .optional(),
});

export const createdApiKey = z.object({
  id: z.string(),
  name: z.string(),
  key: z.string().meta({ description: "Shown only in this response; send it as `X-Api-Key`." }),
  allowed_paths: z.array(z.string()).nullable().meta({ description: "Null: the key is not restricted." }),
});

export const apiKeyEntry = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string().meta({ description: "The first characters of the key." }),
    allowed_paths: z.array(z.string()).nullable(),
    created: z.number().int().meta({ description: "Unix timestamp in seconds." }),
  })
  .meta({ id: "ApiKey" });

export const apiKeyIdInput = z.object({ id: uuidParam("Id of the API key.") });

export const resetPasswordInput = z.object({
  token: opaqueToken.meta({ description: "From the link: `{APP_URL}/password/reset#token=...`." }),
  password: newPassword,
});

export const reauthenticateInput = z
  .object({
    password: z.string().min(1).max(MAX_PASSWORD_LENGTH, atMost(MAX_PASSWORD_LENGTH)).optional(),
    totp_code: z
      .string()
      .trim()
      .regex(/^\d{6}$/, { error: "must be 6 digits" })
      .optional(),
  })
  .refine((input) => (input.password === undefined) !== (input.totp_code === undefined), {
    error: "give either password or totp_code",
  });

export const reauthenticated = z.object({
  auth_token: z.string().meta({ description: "A new access token of the same session, carrying the new `auth_time`." }),
  auth_time: z.number().int().meta({ description: "Unix timestamp in seconds: now." }),
});

import { type PublicKeyCredentialRequestOptionsJSON, startAuthentication } from "@simplewebauthn/browser";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { openApi } from "../api/client.ts";
import type { SignedIn } from "../api/session.ts";
import { ActionForm } from "../ui/action-form.tsx";
import { OneTimeCodeField } from "../ui/credential-fields.tsx";
import { FormProblem } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";

export interface MfaChallenge {
  mfa_token: string;
  methods: string[];
}

type Completed = SignedIn & { refresh_token: string };

/** The second step of a sign-in: a TOTP code, or a passkey. */
export function SecondFactor({ challenge, onDone }: { challenge: MfaChallenge; onDone: (r: Completed) => void }) {
  const [code, setCode] = useState("");
  const totp = useMutation({
    mutationFn: () => openApi.accounts.authWithMfa.mutate({ mfa_token: challenge.mfa_token, totp_code: code }),
    onSuccess: ({ data }) => onDone(data),
  });
  const passkey = useMutation({
    mutationFn: async () => {
      const options = await openApi.accounts.passkeys.authOptions.mutate({ mfa_token: challenge.mfa_token });
      // @simplewebauthn/server's options, passed through: the API's schema types their WebAuthn words as strings.
      const assertion = await startAuthentication({ optionsJSON: options as PublicKeyCredentialRequestOptionsJSON });
      return openApi.accounts.authWithMfa.mutate({
        mfa_token: challenge.mfa_token,
        passkey: { ...assertion, clientExtensionResults: { ...assertion.clientExtensionResults } },
      });
    },
    onSuccess: ({ data }) => onDone(data),
  });
  const problem = totp.error ? problemOf(totp.error) : passkey.error ? problemOf(passkey.error) : null;
  return (
    <div>
      <FormProblem problem={problem} />
      {challenge.methods.includes("totp") && (
        <ActionForm onSubmit={totp.mutate} pending={totp.isPending} submitLabel="Verify">
          <OneTimeCodeField
            label="Code from your authenticator app"
            name="totp_code"
            error={problem?.fields.totp_code}
            value={code}
            onChange={setCode}
          />
        </ActionForm>
      )}
      {challenge.methods.includes("passkey") && (
        <button type="button" className="secondary" onClick={() => passkey.mutate()} disabled={passkey.isPending}>
          Use a passkey
        </button>
      )}
    </div>
  );
}

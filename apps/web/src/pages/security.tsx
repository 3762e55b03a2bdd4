import { type PublicKeyCredentialCreationOptionsJSON, startRegistration } from "@simplewebauthn/browser";
import { useMutation } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { api, session } from "../api/client.ts";
import { ActionForm } from "../ui/action-form.tsx";
import { OneTimeCodeField } from "../ui/credential-fields.tsx";
import { FormProblem, Notice } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";
import { ConfirmItsYou, needsRecentSignIn } from "../ui/recent-sign-in.tsx";

/** Second factors: an authenticator app (TOTP) and passkeys. */
export function SecurityPage() {
  const [code, setCode] = useState("");
  const [totpOn, setTotpOn] = useState(session.current?.totp_enabled ?? false);
  const [passkeyAdded, setPasskeyAdded] = useState(false);
  // The change to make once the person has confirmed who they are.
  const [pending, setPending] = useState<null | (() => void)>(null);

  const setupTotp = useMutation({ mutationFn: () => api.accounts.totp.setup.mutate({}) });
  const verifyTotp = useMutation({
    mutationFn: () => api.accounts.totp.verify.mutate({ code }),
    onSuccess: () => setTotpOn(true),
  });
  const addPasskey = useMutation({
    mutationFn: async () => {
      const options = await api.accounts.passkeys.registerOptions.mutate({});
      // @simplewebauthn/server's options, passed through: the API's schema types their WebAuthn words as strings.
      const response = await startRegistration({ optionsJSON: options as PublicKeyCredentialCreationOptionsJSON });
      return api.accounts.passkeys.register.mutate({
        response: { ...response, clientExtensionResults: { ...response.clientExtensionResults } },
      });
    },
    onSuccess: () => setPasskeyAdded(true),
  });

  const { error: setupError, reset: resetSetup, mutate: startSetup } = setupTotp;
  const { error: passkeyError, reset: resetPasskey, mutate: startPasskey } = addPasskey;
  // A change the API refused for want of a recent sign-in waits for the person to confirm it is them.
  useEffect(() => {
    if (needsRecentSignIn(setupError)) setPending(() => () => startSetup());
    else if (needsRecentSignIn(passkeyError)) setPending(() => () => startPasskey());
  }, [setupError, passkeyError, startSetup, startPasskey]);

  const failure = [setupTotp.error, verifyTotp.error, addPasskey.error].find(
    (error) => error && !needsRecentSignIn(error),
  );
  const problem = failure ? problemOf(failure) : null;
  const setup = setupTotp.data?.data;
  return (
    <section>
      <h1>Security</h1>
      {pending && (
        <ConfirmItsYou
          onConfirmed={() => {
            const change = pending;
            resetSetup();
            resetPasskey();
            setPending(null);
            change();
          }}
          onCancel={() => {
            resetSetup();
            resetPasskey();
            setPending(null);
          }}
        />
      )}
      <FormProblem problem={problem} />
      <h2>Authenticator app</h2>
      {totpOn ? (
        <Notice>Sign-in asks for a code from your authenticator app.</Notice>
      ) : setup ? (
        <ActionForm
          onSubmit={verifyTotp.mutate}
          pending={verifyTotp.isPending}
          submitLabel="Turn on"
          intro={
            <p>
              Add this key to your authenticator app: <code className="secret-once">{setup.secret}</code> (or open{" "}
              <a href={setup.otpauth_url}>the otpauth link</a> on your phone), then give the code it shows.
            </p>
          }
        >
          <OneTimeCodeField label="Code" error={problem?.fields.code} value={code} onChange={setCode} />
        </ActionForm>
      ) : (
        <button type="button" onClick={() => startSetup()} disabled={setupTotp.isPending}>
          Set up an authenticator app
        </button>
      )}
      <h2>Passkeys</h2>
      {passkeyAdded && <Notice>Passkey added: sign-in can use it as your second step.</Notice>}
      <button type="button" onClick={() => startPasskey()} disabled={addPasskey.isPending}>
        Add a passkey
      </button>
    </section>
  );
}

import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { openApi } from "../api/client.ts";
import { ActionForm } from "../ui/action-form.tsx";
import { PasswordField } from "../ui/credential-fields.tsx";
import { TextField } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";
import { AuthCard, tokenFromHash } from "./auth-card.tsx";
import { useSignIn } from "./sign-in.tsx";

/**
 * `{APP_URL}/invitations/accept#token=…`. The link does not say whether its email already
 * has a user, so the person says: new here (choose a password and a name) or not (prove
 * the password they have; a second factor follows when enrolled).
 */
export function AcceptInvitationPage() {
  const [token] = useState(tokenFromHash);
  const [existing, setExisting] = useState(false);
  const [password, setPassword] = useState("");
  const [displayName, setDisplayName] = useState("");
  const { answered, secondStep } = useSignIn();
  const accept = useMutation({
    mutationFn: () =>
      openApi.accounts.invitations.accept.mutate({
        token,
        password,
        display_name: existing ? undefined : displayName || undefined,
      }),
    onSuccess: answered,
  });
  const problem = accept.error ? problemOf(accept.error) : null;

  if (secondStep) return secondStep;
  return (
    <AuthCard title="Join the account">
      {!token && <div role="alert">This link has no token. Open the link from the invitation mail again.</div>}
      <fieldset className="choice">
        <legend>Do you already have a user on this platform?</legend>
        <label>
          <input type="radio" name="existing" checked={!existing} onChange={() => setExisting(false)} /> No, I am new
          here
        </label>
        <label>
          <input type="radio" name="existing" checked={existing} onChange={() => setExisting(true)} /> Yes, I have one
        </label>
      </fieldset>
      <ActionForm
        onSubmit={accept.mutate}
        pending={accept.isPending}
        disabled={!token}
        problem={problem}
        submitLabel="Accept invitation"
      >
        {!existing && (
          <TextField
            label="Your name"
            error={problem?.fields.display_name}
            name="display_name"
            autoComplete="name"
            value={displayName}
            onChange={setDisplayName}
          />
        )}
        <PasswordField
          kind={existing ? "current" : "new"}
          label={existing ? "Your password" : "Choose a password"}
          error={problem?.fields.password}
          value={password}
          onChange={setPassword}
        />
      </ActionForm>
    </AuthCard>
  );
}

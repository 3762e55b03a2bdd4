import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { openApi } from "../api/client.ts";
import { FormProblem, TextField } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";
import { AuthCard, tokenFromHash } from "./auth-card.tsx";
import { type MfaChallenge, SecondFactor } from "./second-factor.tsx";
import { useFinishSignIn } from "./sign-in.tsx";

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
  const [challenge, setChallenge] = useState<MfaChallenge | null>(null);
  const finish = useFinishSignIn();
  const accept = useMutation({
    mutationFn: () =>
      openApi.accounts.invitations.accept.mutate({
        token,
        password,
        display_name: existing ? undefined : displayName || undefined,
      }),
    onSuccess: async ({ data }) => {
      if ("mfa_required" in data) setChallenge({ mfa_token: data.mfa_token, methods: data.methods });
      else await finish(data);
    },
  });
  const problem = accept.error ? problemOf(accept.error) : null;

  if (challenge) {
    return (
      <AuthCard title="Second factor">
        <SecondFactor challenge={challenge} onDone={(result) => void finish(result)} />
      </AuthCard>
    );
  }
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
      <form
        onSubmit={(event) => {
          event.preventDefault();
          accept.mutate();
        }}
      >
        <FormProblem problem={problem} />
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
        <TextField
          label={existing ? "Your password" : "Choose a password"}
          error={problem?.fields.password}
          hint={existing ? undefined : "At least 10 characters."}
          name="password"
          type="password"
          autoComplete={existing ? "current-password" : "new-password"}
          value={password}
          onChange={setPassword}
          required
        />
        <button type="submit" disabled={accept.isPending || !token}>
          Accept invitation
        </button>
      </form>
    </AuthCard>
  );
}

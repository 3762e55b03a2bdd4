import { useMutation } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { useState } from "react";
import { openApi } from "../api/client.ts";
import { ActionForm } from "../ui/action-form.tsx";
import { EmailField, PasswordField } from "../ui/credential-fields.tsx";
import { Notice } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";
import { AuthCard, tokenFromHash } from "./auth-card.tsx";

export function ForgotPasswordPage() {
  const [email, setEmail] = useState("");
  const ask = useMutation({ mutationFn: () => openApi.accounts.password.forgot.mutate({ email }) });
  const problem = ask.error ? problemOf(ask.error) : null;
  return (
    <AuthCard title="Reset your password" footer={<Link to="/console/sign-in">Back to sign in</Link>}>
      {ask.isSuccess ? (
        <Notice>If {email} has an account, a link to reset its password is on its way. It works for an hour.</Notice>
      ) : (
        <ActionForm onSubmit={ask.mutate} pending={ask.isPending} problem={problem} submitLabel="Send the link">
          <EmailField error={problem?.fields.email} value={email} onChange={setEmail} />
        </ActionForm>
      )}
    </AuthCard>
  );
}

/** `{APP_URL}/password/reset#token=…`: the page the mailed link opens. */
export function ResetPasswordPage() {
  const [password, setPassword] = useState("");
  const [token] = useState(tokenFromHash);
  const reset = useMutation({ mutationFn: () => openApi.accounts.password.reset.mutate({ token, password }) });
  const problem = reset.error ? problemOf(reset.error) : null;
  if (reset.isSuccess) {
    return (
      <AuthCard title="Password changed">
        <Notice>Your password is changed and every other session of yours has ended.</Notice>
        <Link to="/console/sign-in">Sign in</Link>
      </AuthCard>
    );
  }
  return (
    <AuthCard title="Choose a new password">
      {!token && <div role="alert">This link has no token. Open the link from the mail again.</div>}
      <ActionForm
        onSubmit={reset.mutate}
        pending={reset.isPending}
        disabled={!token}
        problem={problem?.fields.token ? { ...problem, fields: {} } : problem}
        submitLabel="Set password"
      >
        <PasswordField
          kind="new"
          label="New password"
          error={problem?.fields.password}
          value={password}
          onChange={setPassword}
        />
      </ActionForm>
    </AuthCard>
  );
}

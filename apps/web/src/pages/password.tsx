import { useMutation } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { useState } from "react";
import { openApi } from "../api/client.ts";
import { FormProblem, Notice, TextField } from "../ui/form.tsx";
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
        <form
          onSubmit={(event) => {
            event.preventDefault();
            ask.mutate();
          }}
        >
          <FormProblem problem={problem} />
          <TextField
            label="Email"
            error={problem?.fields.email}
            name="email"
            type="email"
            autoComplete="username"
            value={email}
            onChange={setEmail}
            required
          />
          <button type="submit" disabled={ask.isPending}>
            Send the link
          </button>
        </form>
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
      <form
        onSubmit={(event) => {
          event.preventDefault();
          reset.mutate();
        }}
      >
        <FormProblem problem={problem?.fields.token ? { ...problem, fields: {} } : problem} />
        <TextField
          label="New password"
          error={problem?.fields.password}
          hint="At least 10 characters."
          name="password"
          type="password"
          autoComplete="new-password"
          value={password}
          onChange={setPassword}
          required
        />
        <button type="submit" disabled={reset.isPending || !token}>
          Set password
        </button>
      </form>
    </AuthCard>
  );
}

import { useMutation } from "@tanstack/react-query";
import { Link, useNavigate, useSearch } from "@tanstack/react-router";
import { useState } from "react";
import { openApi, session } from "../api/client.ts";
import type { SignedIn } from "../api/session.ts";
import { FormProblem, TextField } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";
import { AuthCard } from "./auth-card.tsx";
import { type MfaChallenge, SecondFactor } from "./second-factor.tsx";
import { signInTarget } from "./sign-in-target.ts";

/** After a sign-in: keep the session, then go where the person was headed. */
export function useFinishSignIn() {
  const navigate = useNavigate();
  const { redirect } = useSearch({ strict: false }) as { redirect?: unknown };
  return async (result: SignedIn & { refresh_token: string }) => {
    await session.signedIn(result);
    await navigate({ to: signInTarget(redirect) });
  };
}

export function SignInPage() {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [challenge, setChallenge] = useState<MfaChallenge | null>(null);
  const finish = useFinishSignIn();
  const signIn = useMutation({
    mutationFn: () => openApi.accounts.authWithPassword.mutate({ email, password }),
    onSuccess: async ({ data }) => {
      if ("mfa_required" in data) setChallenge({ mfa_token: data.mfa_token, methods: data.methods });
      else await finish(data);
    },
  });
  const problem = signIn.error ? problemOf(signIn.error) : null;

  if (challenge) {
    return (
      <AuthCard title="Second factor">
        <SecondFactor challenge={challenge} onDone={(result) => void finish(result)} />
      </AuthCard>
    );
  }
  return (
    <AuthCard
      title="Sign in"
      footer={
        <>
          <Link to="/console/password/forgot">Forgot your password?</Link> ·{" "}
          <Link to="/console/sign-up">Create an account</Link>
        </>
      }
    >
      <form
        onSubmit={(event) => {
          event.preventDefault();
          signIn.mutate();
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
        <TextField
          label="Password"
          error={problem?.fields.password}
          name="password"
          type="password"
          autoComplete="current-password"
          value={password}
          onChange={setPassword}
          required
        />
        <button type="submit" disabled={signIn.isPending}>
          Sign in
        </button>
      </form>
    </AuthCard>
  );
}

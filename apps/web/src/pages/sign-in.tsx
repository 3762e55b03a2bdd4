import { useMutation } from "@tanstack/react-query";
import { getRouteApi, Link, useNavigate } from "@tanstack/react-router";
import { useState } from "react";
import { openApi, session } from "../api/client.ts";
import type { SignedIn } from "../api/session.ts";
import { ActionForm } from "../ui/action-form.tsx";
import { EmailField, PasswordField } from "../ui/credential-fields.tsx";
import { problemOf } from "../ui/problem.ts";
import { AuthCard } from "./auth-card.tsx";
import { type MfaChallenge, SecondFactor } from "./second-factor.tsx";
import { signInTarget } from "./sign-in-target.ts";

const route = getRouteApi("/console/sign-in");

type SignedInAnswer = SignedIn & { refresh_token: string };

/**
 * Signing in, whichever form began it (sign-in, sign-up, an invitation): `finish` keeps the
 * session and goes where the person was headed (`redirect`, when `signInTarget` allows it);
 * `answered` does so, or first asks for the second factor the answer calls for, which
 * `secondStep` then shows in place of the form.
 */
export function useSignIn(redirect?: string) {
  const navigate = useNavigate();
  const [challenge, setChallenge] = useState<MfaChallenge | null>(null);
  const finish = async (result: SignedInAnswer) => {
    await session.signedIn(result);
    await navigate({ to: signInTarget(redirect) });
  };
  const answered = async ({ data }: { data: SignedInAnswer | ({ mfa_required: true } & MfaChallenge) }) => {
    if ("mfa_required" in data) setChallenge({ mfa_token: data.mfa_token, methods: data.methods });
    else await finish(data);
  };
  const secondStep = challenge && (
    <AuthCard title="Second factor">
      <SecondFactor challenge={challenge} onDone={(result) => void finish(result)} />
    </AuthCard>
  );
  return { finish, answered, secondStep };
}

export function SignInPage() {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const { answered, secondStep } = useSignIn(route.useSearch().redirect);
  const signIn = useMutation({
    mutationFn: () => openApi.accounts.authWithPassword.mutate({ email, password }),
    onSuccess: answered,
  });
  const problem = signIn.error ? problemOf(signIn.error) : null;

  if (secondStep) return secondStep;
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
      <ActionForm onSubmit={signIn.mutate} pending={signIn.isPending} problem={problem} submitLabel="Sign in">
        <EmailField error={problem?.fields.email} value={email} onChange={setEmail} />
        <PasswordField kind="current" error={problem?.fields.password} value={password} onChange={setPassword} />
      </ActionForm>
    </AuthCard>
  );
}

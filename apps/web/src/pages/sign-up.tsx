import { useMutation } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { useState } from "react";
import { openApi } from "../api/client.ts";
import { ActionForm } from "../ui/action-form.tsx";
import { TextField } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";
import { AuthCard } from "./auth-card.tsx";
import { useSignIn } from "./sign-in.tsx";

export function SignUpPage() {
  const [form, setForm] = useState({ account_name: "", display_name: "", email: "", password: "" });
  const { finish } = useSignIn();
  const signUp = useMutation({
    mutationFn: () => openApi.accounts.signup.mutate({ ...form, display_name: form.display_name || undefined }),
    onSuccess: ({ data }) => finish(data),
  });
  const problem = signUp.error ? problemOf(signUp.error) : null;
  const field = (name: keyof typeof form, label: string, type: string, autoComplete: string, hint?: string) => (
    <TextField
      label={label}
      error={problem?.fields[name]}
      hint={hint}
      name={name}
      type={type}
      autoComplete={autoComplete}
      value={form[name]}
      onChange={(value) => setForm({ ...form, [name]: value })}
      required={name !== "display_name"}
    />
  );
  return (
    <AuthCard title="Create an account" footer={<Link to="/console/sign-in">I have an account</Link>}>
      <ActionForm onSubmit={signUp.mutate} pending={signUp.isPending} problem={problem} submitLabel="Create account">
        {field("account_name", "Account name", "text", "organization")}
        {field("display_name", "Your name", "text", "name")}
        {field("email", "Email", "email", "username")}
        {field("password", "Password", "password", "new-password", "At least 10 characters.")}
      </ActionForm>
    </AuthCard>
  );
}

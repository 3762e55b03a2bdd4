import { PlatformError } from "@platform/client";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { ActionForm } from "./action-form.tsx";
import { PasswordField } from "./credential-fields.tsx";
import { problemOf } from "./problem.ts";

/** The API's 403 for a change that needs a recent sign-in (second factors). */
export const needsRecentSignIn = (error: unknown) =>
  error instanceof PlatformError &&
  error.status === 403 &&
  error.message.startsWith("this needs a sign-in from the last");

/**
 * Asks for the password again when the API wants a recent sign-in, then calls `onConfirmed`
 * (the change that was refused goes ahead: the session now counts as recent).
 */
export function ConfirmItsYou({ onConfirmed, onCancel }: { onConfirmed: () => void; onCancel: () => void }) {
  const [password, setPassword] = useState("");
  const confirm = useMutation({
    mutationFn: () => api.accounts.reauthenticate.mutate({ password }),
    onSuccess: () => onConfirmed(),
  });
  const problem = confirm.error ? problemOf(confirm.error) : null;
  return (
    <ActionForm
      className="confirm"
      aria-label="Confirm it's you"
      onSubmit={confirm.mutate}
      pending={confirm.isPending}
      problem={problem}
      submitLabel="Confirm"
      intro={
        <>
          <h2>Confirm it's you</h2>
          <p>Changing how you sign in needs your password again.</p>
        </>
      }
      after={
        <>
          {" "}
          <button type="button" className="secondary" onClick={onCancel}>
            Cancel
          </button>
        </>
      }
    >
      <PasswordField
        kind="current"
        label="Current password"
        error={problem?.fields.password}
        value={password}
        onChange={setPassword}
      />
    </ActionForm>
  );
}

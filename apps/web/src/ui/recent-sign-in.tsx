import { PlatformError } from "@platform/client";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { FormProblem, TextField } from "./form.tsx";
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
    <form
      className="confirm"
      aria-label="Confirm it's you"
      onSubmit={(event) => {
        event.preventDefault();
        confirm.mutate();
      }}
    >
      <h2>Confirm it's you</h2>
      <p>Changing how you sign in needs your password again.</p>
      <FormProblem problem={problem} />
      <TextField
        label="Current password"
        error={problem?.fields.password}
        type="password"
        autoComplete="current-password"
        value={password}
        onChange={setPassword}
        required
      />
      <button type="submit" disabled={confirm.isPending}>
        Confirm
      </button>{" "}
      <button type="button" className="secondary" onClick={onCancel}>
        Cancel
      </button>
    </form>
  );
}

import { TextField } from "./form.tsx";

/**
 * The fields credentials are typed in, alike wherever they are asked for: browsers and
 * password managers fill and offer to keep them by their `autoComplete`.
 */
interface FieldProps {
  value: string;
  onChange: (value: string) => void;
  error?: string;
}

/** An email address; `username` when it is the person's own (sign-in), none when it is someone else's (an invitation). */
export function EmailField({ own = true, ...props }: FieldProps & { own?: boolean }) {
  return (
    <TextField
      label="Email"
      name="email"
      type="email"
      autoComplete={own ? "username" : undefined}
      required
      {...props}
    />
  );
}

/** A password: the one the person has (`current`), or one they choose (`new`, with the rule it must meet). */
export function PasswordField({ kind, label, ...props }: FieldProps & { kind: "current" | "new"; label?: string }) {
  return (
    <TextField
      label={label ?? "Password"}
      name="password"
      type="password"
      autoComplete={`${kind}-password`}
      hint={kind === "new" ? "At least 10 characters." : undefined}
      required
      {...props}
    />
  );
}

/** A code from an authenticator app. */
export function OneTimeCodeField(props: FieldProps & { label: string; name?: string }) {
  return <TextField inputMode="numeric" autoComplete="one-time-code" required {...props} />;
}

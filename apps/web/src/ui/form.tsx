import { type ReactNode, useId } from "react";
import type { Problem } from "./problem.ts";

/** A labelled input whose error, when the API names it, sits beside it. */
export function Field(props: {
  label: string;
  error?: string;
  hint?: string;
  children: (input: { id: string; "aria-invalid": boolean; "aria-describedby"?: string }) => ReactNode;
}) {
  const id = useId();
  const describedBy = [props.error ? `${id}-error` : "", props.hint ? `${id}-hint` : ""].filter(Boolean).join(" ");
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.children({ id, "aria-invalid": Boolean(props.error), "aria-describedby": describedBy || undefined })}
      {props.hint && (
        <p className="hint" id={`${id}-hint`}>
          {props.hint}
        </p>
      )}
      {props.error && (
        <p className="field-error" id={`${id}-error`}>
          {props.error}
        </p>
      )}
    </div>
  );
}

/** A labelled text input (any `type`) with its error beside it: the form field of most pages. */
export function TextField({
  label,
  error,
  hint,
  value,
  onChange,
  ...rest
}: {
  label: string;
  error?: string;
  hint?: string;
  value: string;
  onChange: (value: string) => void;
  name?: string;
  type?: string;
  autoComplete?: string;
  inputMode?: "numeric" | "text";
  required?: boolean;
}) {
  return (
    <Field label={label} error={error} hint={hint}>
      {(input) => <input {...input} {...rest} value={value} onChange={(event) => onChange(event.target.value)} />}
    </Field>
  );
}

/** A small button that deletes one row of a table, named after what it deletes. */
export function DeleteButton({ what, onClick, verb = "Delete" }: { what: string; onClick: () => void; verb?: string }) {
  return (
    <button type="button" className="secondary small" aria-label={`${verb} ${what}`} onClick={onClick}>
      {verb}
    </button>
  );
}

/** The failure of a form as a whole: what it was, unless every part of it sits beside a field. */
export function FormProblem({ problem }: { problem: Problem | null }) {
  if (!problem) return null;
  const placed = Object.keys(problem.fields).length > 0;
  return (
    <div role="alert" className="problem">
      {placed ? "Some fields need attention." : problem.message}
    </div>
  );
}

export function Notice({ children }: { children: ReactNode }) {
  return (
    <div role="status" className="notice">
      {children}
    </div>
  );
}

import type { ReactNode } from "react";
import { FormProblem } from "./form.tsx";
import type { Problem } from "./problem.ts";

/**
 * A form that does one thing: submitting it (its button, or Enter in a field) runs
 * `onSubmit`; a failure is said above the fields (each field shows its own part beside
 * itself), and the button waits while the action runs.
 */
export function ActionForm(props: {
  onSubmit: () => void;
  submitLabel: string;
  pending?: boolean;
  problem?: Problem | null;
  /** What the form shows before its failure and fields: a heading, a line of explanation. */
  intro?: ReactNode;
  children?: ReactNode;
  /** Further buttons, after the submit button. */
  after?: ReactNode;
  /** The submit button cannot be pressed (besides while the action runs): the input is not ready. */
  disabled?: boolean;
  className?: string;
  "aria-label"?: string;
}) {
  return (
    <form
      className={props.className}
      aria-label={props["aria-label"]}
      onSubmit={(event) => {
        event.preventDefault();
        props.onSubmit();
      }}
    >
      {props.intro}
      <FormProblem problem={props.problem ?? null} />
      {props.children}
      <button type="submit" disabled={props.pending || props.disabled}>
        {props.submitLabel}
      </button>
      {props.after}
    </form>
  );
}

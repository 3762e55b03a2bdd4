import { type ReactNode, useState } from "react";
import { ActionForm } from "./action-form.tsx";
import { Field } from "./form.tsx";
import { parseJson } from "./json-field.ts";
import type { Problem } from "./problem.ts";

/**
 * A form whose body is typed as JSON (node templates, gateways): the API's field errors are
 * listed under the editor with their paths, since they point into what was typed.
 */
export function JsonCreateForm(props: {
  label: string;
  initial: unknown;
  submitLabel: string;
  problem: Problem | null;
  pending: boolean;
  onSubmit: (value: unknown) => void;
  children?: ReactNode;
}) {
  const [text, setText] = useState(JSON.stringify(props.initial, null, 2));
  const parsed = parseJson(text);
  const fieldErrors = Object.entries(props.problem?.fields ?? {});
  return (
    <ActionForm
      onSubmit={() => {
        if ("value" in parsed) props.onSubmit(parsed.value);
      }}
      submitLabel={props.submitLabel}
      pending={props.pending}
      disabled={"error" in parsed}
      problem={props.problem}
    >
      {props.children}
      <Field label={props.label} error={"error" in parsed ? `Not JSON yet: ${parsed.error}` : undefined}>
        {(input) => (
          <textarea {...input} rows={8} spellCheck={false} value={text} onChange={(e) => setText(e.target.value)} />
        )}
      </Field>
      {fieldErrors.length > 0 && (
        <ul className="step-problems">
          {fieldErrors.map(([path, message]) => (
            <li key={path}>
              <strong>{path}</strong>: {message}
            </li>
          ))}
        </ul>
      )}
    </ActionForm>
  );
}

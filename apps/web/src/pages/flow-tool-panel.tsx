import type { RouterOutputs } from "@platform/client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { flowQueries } from "../api/queries.ts";
import { CopyButton } from "../ui/copy-button.tsx";
import { Field, FormProblem, Notice, TextField } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";
import { draftOf, formOf } from "./flow-draft.ts";
import { type ToolForm, toolFormOf, toolOf } from "./flow-tool.ts";

type Flow = RouterOutputs["flows"]["get"]["data"];

/**
 * The switch that offers the flow as a tool of the account's MCP endpoint, with the tool's
 * name, description and schemas; saving sends the flow back as saved but for its `mcp`.
 */
export function FlowToolPanel({ flow }: { flow: Flow }) {
  const queryClient = useQueryClient();
  const [form, setForm] = useState<ToolForm>(() => toolFormOf(flow));
  const set = <K extends keyof ToolForm>(key: K, value: ToolForm[K]) => setForm((f) => ({ ...f, [key]: value }));
  const read = toolOf(form);
  const save = useMutation({
    mutationFn: (mcp: Flow["mcp"]) => {
      const draft = draftOf(formOf(flow), flow.steps, { ...flow, mcp });
      return api.flows.update.mutate({ ...draft, id: flow.id });
    },
    onSuccess: async (answer) => {
      queryClient.setQueryData(flowQueries.one(flow.id).queryKey, answer);
      await queryClient.invalidateQueries({ queryKey: flowQueries.list().queryKey });
    },
  });
  const problem = save.error ? problemOf(save.error) : null;
  const fieldError = (path: string) =>
    ("field" in read && read.field === path ? read.error : undefined) ?? problem?.fields[path];
  const endpoint = `${location.origin}/mcp`;
  return (
    <section className="flow-tool" aria-labelledby="flow-tool-heading">
      <h2 id="flow-tool-heading">MCP tool</h2>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if ("mcp" in read) save.mutate(read.mcp);
        }}
      >
        <FormProblem problem={problem} />
        <label className="check">
          <input
            type="checkbox"
            role="switch"
            aria-checked={form.offered}
            checked={form.offered}
            onChange={(e) => set("offered", e.target.checked)}
          />{" "}
          Offer this flow as a tool of the account's MCP endpoint
        </label>
        {form.offered && (
          <>
            <TextField
              label="Tool name"
              hint="1 to 64 letters, digits, _ or -; unique among the account's flows."
              error={fieldError("mcp.tool")}
              value={form.tool}
              onChange={(value) => set("tool", value)}
            />
            <TextField
              label="Tool description"
              hint="What the tool does: a client's model reads it to choose the tool."
              error={fieldError("mcp.description")}
              value={form.description}
              onChange={(value) => set("description", value)}
            />
            <Field
              label="Input schema (JSON Schema)"
              hint="The arguments, an object schema: a call's arguments become the run's trigger data."
              error={fieldError("mcp.input_schema") ?? firstUnder(problem?.fields, "mcp.input_schema.")}
            >
              {(input) => (
                <textarea
                  {...input}
                  rows={6}
                  spellCheck={false}
                  value={form.inputSchemaText}
                  onChange={(e) => set("inputSchemaText", e.target.value)}
                />
              )}
            </Field>
            <Field
              label="Output schema (JSON Schema, optional)"
              error={fieldError("mcp.output_schema") ?? firstUnder(problem?.fields, "mcp.output_schema.")}
            >
              {(input) => (
                <textarea
                  {...input}
                  rows={3}
                  spellCheck={false}
                  value={form.outputSchemaText}
                  onChange={(e) => set("outputSchemaText", e.target.value)}
                />
              )}
            </Field>
          </>
        )}
        <button type="submit" disabled={save.isPending || "field" in read}>
          Save tool settings
        </button>
      </form>
      {flow.mcp && (
        <Notice>
          Tool <code>{flow.mcp.tool}</code> is offered at <code>{endpoint}</code> to every credential that may start
          this flow. <CopyButton text={endpoint} label="Copy endpoint URL" />
        </Notice>
      )}
    </section>
  );
}

/** The first problem of a field below `prefix` (`mcp.input_schema.properties.n.type: …`), with its path. */
function firstUnder(fields: Record<string, string> | undefined, prefix: string): string | undefined {
  const entry = Object.entries(fields ?? {}).find(([path]) => path.startsWith(prefix));
  return entry ? `${entry[0].slice(prefix.length)}: ${entry[1]}` : undefined;
}

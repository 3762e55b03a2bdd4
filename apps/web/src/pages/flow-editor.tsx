import { WEBHOOK_SERVICES, type WebhookService } from "@platform/client";
import { useMutation, useQuery, useQueryClient, useSuspenseQuery } from "@tanstack/react-query";
import { getRouteApi, useNavigate } from "@tanstack/react-router";
import { type ReactNode, useEffect, useMemo, useState } from "react";
import { api } from "../api/client.ts";
import { flowQueries } from "../api/queries.ts";
import { Field, FormProblem, Notice, TextField } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";
import { StepGraph } from "../ui/step-graph.tsx";
import { describePath, draftOf, emptyForm, type FlowForm, formOf, parseSteps, type SavedFlow } from "./flow-draft.ts";
import { type McpCallStep, readAddedStep, withStepAdded } from "./mcp-step.ts";

/** `custom` needs HMAC settings the form does not edit: it is offered only to a flow saved with them. */
const servicesFor = (current: WebhookService) =>
  WEBHOOK_SERVICES.filter((service) => service !== "custom" || current === "custom");

/** Waits `ms` after the last change before answering it: the draft is checked as the person pauses. */
function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

const newRoute = getRouteApi("/signed-in/console/flows/new");

export function NewFlowPage() {
  const step = readAddedStep(newRoute.useSearch().add_step);
  const added = step && withStepAdded(emptyForm.stepsText, step, true);
  return (
    <FlowEditor
      initial={added ? { ...emptyForm, stepsText: added.text } : emptyForm}
      notice={added && <AddedStep step={added.added} />}
    />
  );
}

const editRoute = getRouteApi("/signed-in/console/flows/$flowId/edit");

export function EditFlowPage() {
  const { flowId } = editRoute.useParams();
  const flow = useSuspenseQuery(flowQueries.one(flowId)).data.data;
  const step = readAddedStep(editRoute.useSearch().add_step);
  const form = formOf(flow);
  const added = step && withStepAdded(form.stepsText, step);
  return (
    <FlowEditor
      key={`${flow.id}:${flow.revision}`}
      initial={added ? { ...form, stepsText: added.text } : form}
      saved={flow}
      notice={added && <AddedStep step={added.added} />}
    />
  );
}

/** Says which step the registry page added, and what is left to do. */
function AddedStep({ step }: { step: McpCallStep }) {
  return (
    <Notice>
      Step “{step.name}” added: it calls tool <code>{step.payload.tool}</code> of{" "}
      <code>{step.payload.server.registry}</code>, its arguments read from the trigger. Check them, then save.
    </Notice>
  );
}

function FlowEditor({ initial, saved, notice }: { initial: FlowForm; saved?: SavedFlow; notice?: ReactNode }) {
  const [form, setForm] = useState(initial);
  const set = <K extends keyof FlowForm>(key: K, value: FlowForm[K]) => setForm((f) => ({ ...f, [key]: value }));
  const navigate = useNavigate();
  const queryClient = useQueryClient();

  const parsed = useMemo(() => parseSteps(form.stepsText), [form.stepsText]);
  const steps = "steps" in parsed ? parsed.steps : undefined;
  const draft = useMemo(() => draftOf(form, steps, saved), [form, steps, saved]);
  const settled = useSettled(draft, 300);
  const check = useQuery({
    ...flowQueries.check(settled),
    enabled: "steps" in parsed,
    placeholderData: (previous) => previous,
  });
  const problems = check.data?.data.problems ?? [];
  const fieldProblem = (path: string) => problems.find((p) => p.path === path)?.message;
  const triggerProblem = problems.filter((p) => p.path.startsWith("trigger")).map((p) => `${p.path}: ${p.message}`)[0];
  const stepProblems = problems.filter((p) => /^(steps|on_failure)(\.|$)/.test(p.path));

  const save = useMutation({
    mutationFn: () => (saved ? api.flows.update.mutate({ ...draft, id: saved.id }) : api.flows.create.mutate(draft)),
    onSuccess: async ({ data }) => {
      await queryClient.invalidateQueries({ queryKey: flowQueries.list().queryKey });
      queryClient.setQueryData(flowQueries.one(data.id).queryKey, { data });
      await navigate({ to: "/console/flows/$flowId", params: { flowId: data.id } });
    },
  });
  const problem = save.error ? problemOf(save.error) : null;

  return (
    <section>
      <h1>{saved ? `Edit ${initial.name}` : "New flow"}</h1>
      {notice}
      <form
        className="editor"
        onSubmit={(event) => {
          event.preventDefault();
          save.mutate();
        }}
      >
        <FormProblem problem={problem} />
        <div className="editor-form">
          <TextField
            label="Name"
            error={problem?.fields.name ?? fieldProblem("name")}
            name="name"
            value={form.name}
            onChange={(value) => set("name", value)}
          />
          <TextField
            label="Description"
            error={problem?.fields.description ?? fieldProblem("description")}
            name="description"
            value={form.description}
            onChange={(value) => set("description", value)}
          />
          <label className="check">
            <input type="checkbox" checked={form.active} onChange={(e) => set("active", e.target.checked)} /> Active
          </label>
          <fieldset>
            <legend>Trigger</legend>
            <Field label="Started by" error={triggerProblem}>
              {(input) => (
                <select
                  {...input}
                  value={form.triggerType}
                  onChange={(e) => set("triggerType", e.target.value as FlowForm["triggerType"])}
                >
                  <option value="webhook">a webhook</option>
                  <option value="schedule">a schedule</option>
                  <option value="manual">hand (API or console) only</option>
                </select>
              )}
            </Field>
            {form.triggerType === "webhook" && (
              <>
                <Field label="Answer the sender">
                  {(input) => (
                    <select
                      {...input}
                      value={form.responseMode}
                      onChange={(e) => set("responseMode", e.target.value as FlowForm["responseMode"])}
                    >
                      <option value="acknowledge">at once (202)</option>
                      <option value="wait">with the run's result</option>
                    </select>
                  )}
                </Field>
                <Field label="Who may send">
                  {(input) => (
                    <select
                      {...input}
                      value={form.access}
                      onChange={(e) => set("access", e.target.value as FlowForm["access"])}
                    >
                      <option value="public">anyone with the URL</option>
                      <option value="api_key">callers with an API key</option>
                      <option value="signature">a service signing its deliveries</option>
                    </select>
                  )}
                </Field>
                {form.access === "signature" && (
                  <>
                    <Field label="Service">
                      {(input) => (
                        <select
                          {...input}
                          value={form.service}
                          onChange={(e) =>
                            set("service", WEBHOOK_SERVICES.find((s) => s === e.target.value) ?? form.service)
                          }
                        >
                          {servicesFor(form.service).map((service) => (
                            <option key={service}>{service}</option>
                          ))}
                        </select>
                      )}
                    </Field>
                    <TextField
                      label="Signing secret"
                      error={problem?.fields["trigger.signing_secret"] ?? fieldProblem("trigger.signing_secret")}
                      hint={saved ? "Leave empty to keep the saved secret." : undefined}
                      type="password"
                      autoComplete="off"
                      value={form.signingSecret}
                      onChange={(value) => set("signingSecret", value)}
                    />
                  </>
                )}
              </>
            )}
            {form.triggerType === "schedule" && (
              <>
                <TextField
                  label="Cron"
                  error={fieldProblem("trigger.cron")}
                  hint="Five fields: minute hour day month weekday."
                  value={form.cron}
                  onChange={(value) => set("cron", value)}
                />
                <TextField
                  label="Time zone"
                  error={fieldProblem("trigger.timezone")}
                  value={form.timezone}
                  onChange={(value) => set("timezone", value)}
                />
                <Field label="Missed ticks">
                  {(input) => (
                    <select
                      {...input}
                      value={form.catchUp}
                      onChange={(e) => set("catchUp", e.target.value as FlowForm["catchUp"])}
                    >
                      <option value="skip">skip them</option>
                      <option value="latest">run the latest once</option>
                    </select>
                  )}
                </Field>
              </>
            )}
          </fieldset>
        </div>
        <div className="editor-steps">
          <Field label="Steps (JSON)" error={"error" in parsed ? `Not JSON yet: ${parsed.error}` : undefined}>
            {(input) => (
              <textarea
                {...input}
                name="steps"
                spellCheck={false}
                rows={18}
                value={form.stepsText}
                onChange={(e) => set("stepsText", e.target.value)}
              />
            )}
          </Field>
          <output aria-live="polite" className="check-result">
            {"error" in parsed ? null : stepProblems.length === 0 ? (
              check.data && <span className="ok">The steps are valid.</span>
            ) : (
              <ul className="step-problems">
                {stepProblems.map((p) => (
                  <li key={`${p.path}:${p.message}`}>
                    <strong>{describePath(p.path, steps)}</strong>: {p.message}
                  </li>
                ))}
              </ul>
            )}
          </output>
          <StepGraph steps={Array.isArray(steps) ? steps : []} />
        </div>
        <div className="actions">
          <button type="submit" disabled={save.isPending}>
            {saved ? "Save" : "Create flow"}
          </button>
        </div>
      </form>
    </section>
  );
}

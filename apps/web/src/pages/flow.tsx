import { useMutation, useQueryClient, useSuspenseQuery } from "@tanstack/react-query";
import { getRouteApi, Link } from "@tanstack/react-router";
import { Fragment, useState } from "react";
import { api } from "../api/client.ts";
import { flowQueries } from "../api/queries.ts";
import { CopyButton } from "../ui/copy-button.tsx";
import { Notice } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";
import { FilteredRuns } from "../ui/runs-table.tsx";
import { StepGraph } from "../ui/step-graph.tsx";
import { controlFacts } from "./flow-controls.ts";
import { draftOf, formOf } from "./flow-draft.ts";
import { FlowToolPanel } from "./flow-tool-panel.tsx";

const route = getRouteApi("/signed-in/console/flows/$flowId");

export function FlowPage() {
  const { flowId } = route.useParams();
  const search = route.useSearch();
  const navigate = route.useNavigate();
  const queryClient = useQueryClient();
  const flow = flowQueries.one(flowId);
  const current = useSuspenseQuery(flow).data.data;
  const [testBody, setTestBody] = useState('{\n  "hello": "world"\n}');

  const setActive = useMutation({
    mutationFn: (active: boolean) => {
      // The flow as saved, but for `active`: what the editor would send unchanged.
      const draft = draftOf({ ...formOf(current), active }, current.steps, current);
      return api.flows.update.mutate({ ...draft, id: current.id });
    },
    onSuccess: async (answer) => {
      queryClient.setQueryData(flow.queryKey, answer);
      await queryClient.invalidateQueries({ queryKey: flowQueries.list().queryKey });
    },
  });
  const sendTest = useMutation({
    mutationFn: () => api.runs.start.mutate({ flow_id: flowId, trigger: JSON.parse(testBody) }),
  });

  const failure = setActive.error ?? sendTest.error;
  return (
    <section>
      <div className="page-head">
        <h1>{current.name}</h1>
        <Link to="/console/flows/$flowId/edit" params={{ flowId }} className="button">
          Edit
        </Link>
        <button type="button" className="secondary" onClick={() => setActive.mutate(!current.active)}>
          {current.active ? "Deactivate" : "Activate"}
        </button>
      </div>
      {failure && <div role="alert">{problemOf(failure).message}</div>}
      <dl className="facts">
        <dt>Status</dt>
        <dd>{current.active ? "active" : "inactive"}</dd>
        <dt>Trigger</dt>
        <dd>{current.trigger.type}</dd>
        <dt>Revision</dt>
        <dd>{current.revision}</dd>
        {current.trigger.type === "webhook" && (
          <>
            <dt>Webhook URL</dt>
            <dd>
              <code>{current.webhook.url}</code> <CopyButton text={current.webhook.url} label="Copy URL" />
            </dd>
          </>
        )}
        {current.trigger.type === "schedule" && (
          <>
            <dt>Next ticks</dt>
            <dd>{current.trigger.next_fire_times.map((t) => new Date(t).toLocaleString()).join(", ") || "none"}</dd>
          </>
        )}
        {controlFacts(current).map(({ label, text }) => (
          <Fragment key={label}>
            <dt>{label}</dt>
            <dd>{text}</dd>
          </Fragment>
        ))}
      </dl>
      <StepGraph steps={current.steps} />
      <FlowToolPanel key={current.revision} flow={current} />
      <details className="test-event">
        <summary>Send a test event</summary>
        <label htmlFor="test-body">Trigger data (JSON)</label>
        <textarea id="test-body" rows={5} value={testBody} onChange={(e) => setTestBody(e.target.value)} />
        <button type="button" onClick={() => sendTest.mutate()} disabled={sendTest.isPending}>
          Start a run
        </button>
        {sendTest.data && "run_id" in sendTest.data && (
          <Notice>
            Run{" "}
            <Link to="/console/runs/$runId" params={{ runId: sendTest.data.run_id }}>
              {sendTest.data.run_id}
            </Link>{" "}
            accepted.
          </Notice>
        )}
      </details>
      <h2>Runs</h2>
      <FilteredRuns
        flowId={flowId}
        search={search}
        onSearch={(next) => navigate({ to: ".", search: next, replace: true })}
      />
    </section>
  );
}

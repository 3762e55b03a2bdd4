import { isFinalRunStatus, type RouterOutputs } from "@platform/client";
import { useMutation, useQuery, useQueryClient, useSuspenseQuery } from "@tanstack/react-query";
import { getRouteApi, Link, useNavigate } from "@tanstack/react-router";
import { api } from "../api/client.ts";
import { flowQueries, runQueries } from "../api/queries.ts";
import { JsonView } from "../ui/json-view.tsx";
import { problemOf } from "../ui/problem.ts";

type Run = RouterOutputs["runs"]["get"];
type Step = Run["steps"][number];

type Attempt = Step["attempts"][number];

const ms = (from: string, to: string | undefined, now: number) => (to ? Date.parse(to) : now) - Date.parse(from);

/** Whether an attempt has more to show than its bar: an error, console lines, a call. */
const hasDetails = (attempt: Attempt) => Boolean(attempt.error || attempt.logs?.length || attempt.http);

const size = (bytes: number) => (bytes < 10_240 ? `${bytes} B` : `${Math.round(bytes / 1024)} KiB`);

/** What one attempt did: the call it made, what it wrote to the console (time from its start), why it failed. */
function AttemptDetails({ attempt, n }: { attempt: Attempt; n: number }) {
  const { http, logs } = attempt;
  return (
    <li className="tl-attempt">
      <span className="tl-attempt-name">Attempt {n + 1}</span>
      {http && (
        <p className="tl-call">
          <code>
            {http.method} {http.url}
          </code>{" "}
          → {http.status === null ? "no answer" : http.status} in {http.duration_ms} ms, sent {size(http.request_bytes)}
          {http.response_bytes !== null && `, received ${size(http.response_bytes)}`}
        </p>
      )}
      {logs && logs.length > 0 && (
        <details className="tl-logs" open={logs.length <= 20}>
          <summary>
            Console ({logs.length} line{logs.length === 1 ? "" : "s"})
          </summary>
          <ol>
            {logs.map((line, index) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: lines have no identity but their place, which never changes
              <li key={index} className={`log log-${line.level}`}>
                <span className="log-at">+{ms(attempt.started_at, line.at, 0)} ms</span>
                <span className="log-level">{line.level}</span>
                <pre>{line.message}</pre>
              </li>
            ))}
          </ol>
        </details>
      )}
      {attempt.error && <p className="tl-error">{attempt.error}</p>}
    </li>
  );
}

/** Each step's attempts as bars on one time axis, from the run's acceptance to its end (or now). */
function Timeline({ run, now }: { run: Run; now: number }) {
  const start = Date.parse(run.created_at);
  const end = run.finished_at ? Date.parse(run.finished_at) : now;
  const span = Math.max(1, end - start);
  const at = (time: string) => `${((Date.parse(time) - start) / span) * 100}%`;
  const width = (from: string, to: string | undefined) => `${Math.max(0.5, (ms(from, to, now) / span) * 100)}%`;
  return (
    <ol className="timeline" aria-label="Steps">
      {run.steps.map((step: Step) => (
        // A step's name is unique in its flow; inside a for-each, its item tells the repeats apart.
        <li key={`${step.name}:${step.item?.join(".") ?? ""}`} className={`tl-step tl-${step.status}`}>
          <div className="tl-label">
            <strong>{step.name}</strong>
            {step.item && <span> item {step.item.join(".")}</span>}
            <span className={`status status-${step.status}`}>{step.status}</span>
            <span className="tl-duration">{ms(step.started_at, step.finished_at, now)} ms</span>
          </div>
          <div className="tl-track">
            {step.attempts.map((attempt, n) => (
              <span
                key={attempt.started_at}
                className={`tl-bar${attempt.error ? " tl-bar-failed" : ""}`}
                style={{ left: at(attempt.started_at), width: width(attempt.started_at, attempt.finished_at) }}
                title={`attempt ${n + 1}: ${ms(attempt.started_at, attempt.finished_at, now)} ms${attempt.error ? `, ${attempt.error}` : ""}`}
              />
            ))}
          </div>
          {step.attempts.some(hasDetails) && (
            <ol className="tl-attempts" aria-label={`Attempts of ${step.name}`}>
              {step.attempts.map((attempt, n) =>
                hasDetails(attempt) ? <AttemptDetails key={attempt.started_at} attempt={attempt} n={n} /> : null,
              )}
            </ol>
          )}
          {step.output !== undefined && <JsonView value={step.output} label="output" open={false} />}
        </li>
      ))}
    </ol>
  );
}

const route = getRouteApi("/signed-in/console/runs/$runId");

export function RunPage() {
  const { runId } = route.useParams();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const query = runQueries.one(runId);
  const run = useSuspenseQuery({
    ...query,
    // A run under way is followed until it ends.
    refetchInterval: (q) => (q.state.data && isFinalRunStatus(q.state.data.status) ? false : 1000),
  });
  const current = run.data;
  const flow = useQuery({
    ...flowQueries.one(current.flow_id),
    // A deleted flow's runs are still readable: its name is then unknown, not an error.
    retry: false,
  });
  const replay = useMutation({
    mutationFn: () => api.runs.replay.mutate({ id: runId }),
    onSuccess: ({ run_id }) => navigate({ to: "/console/runs/$runId", params: { runId: run_id } }),
  });
  const cancel = useMutation({
    mutationFn: () => api.runs.cancel.mutate({ id: runId }),
    onSuccess: (answer) => queryClient.setQueryData(query.queryKey, answer),
  });

  const failure = replay.error ?? cancel.error;
  return (
    <section>
      <div className="page-head">
        <h1>
          Run <code>{current.id}</code>
        </h1>
        <span className={`status status-${current.status}`}>{current.status}</span>
        <button type="button" onClick={() => replay.mutate()} disabled={replay.isPending}>
          Replay
        </button>
        {!isFinalRunStatus(current.status) && (
          <button type="button" className="danger" onClick={() => cancel.mutate()} disabled={cancel.isPending}>
            Cancel
          </button>
        )}
      </div>
      {failure && <div role="alert">{problemOf(failure).message}</div>}
      <dl className="facts">
        <dt>Flow</dt>
        <dd>
          <Link to="/console/flows/$flowId" params={{ flowId: current.flow_id }}>
            {flow.data?.data.name ?? current.flow_id}
          </Link>{" "}
          (revision {current.revision})
        </dd>
        <dt>Accepted</dt>
        <dd>{new Date(current.created_at).toLocaleString()}</dd>
        <dt>Duration</dt>
        <dd>{current.duration_ms === null ? "under way" : `${current.duration_ms} ms`}</dd>
        {current.queue_reason && (
          <>
            <dt>Waiting</dt>
            <dd>{current.queue_reason}</dd>
          </>
        )}
        {current.end_reason && (
          <>
            <dt>Ended by its flow control</dt>
            <dd>{current.end_reason}</dd>
          </>
        )}
        {current.taken_by && (
          <>
            <dt>Runs in its place</dt>
            <dd>
              <Link to="/console/runs/$runId" params={{ runId: current.taken_by }}>
                {current.taken_by}
              </Link>
            </dd>
          </>
        )}
        {current.trace_id && (
          <>
            <dt>Trace</dt>
            <dd>
              <code title="Look it up in the tracing backend this deployment exports to">{current.trace_id}</code>
            </dd>
          </>
        )}
        {current.replay_of && (
          <>
            <dt>Replay of</dt>
            <dd>
              <Link to="/console/runs/$runId" params={{ runId: current.replay_of }}>
                {current.replay_of}
              </Link>
            </dd>
          </>
        )}
      </dl>
      {current.error && (
        <div className="run-error" role="alert">
          <strong>Failed:</strong> {current.error}
        </div>
      )}
      <h2>Timeline</h2>
      <Timeline run={current} now={run.dataUpdatedAt} />
      <h2>Data</h2>
      <JsonView value={current.trigger} label="trigger" />
      {current.output !== undefined && current.output !== null && <JsonView value={current.output} label="output" />}
    </section>
  );
}

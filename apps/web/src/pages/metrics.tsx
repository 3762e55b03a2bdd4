import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { flowQueries, runQueries } from "../api/queries.ts";
import { ActivityChart } from "../ui/activity-chart.tsx";
import { activitySeriesOf, totalOf } from "../ui/activity-series.ts";
import { problemOf } from "../ui/problem.ts";

/** Runs started, succeeded and failed, and webhook deliveries, over the last hour or day, per flow. */
export function MetricsPage() {
  const [span, setSpan] = useState<"hour" | "day">("hour");
  const [flowId, setFlowId] = useState("");
  const flows = useQuery(flowQueries.list());
  const activity = useQuery({
    ...runQueries.activity(span, flowId),
    refetchInterval: 5000,
    placeholderData: (previous) => previous,
  });
  const series = activitySeriesOf(activity.data?.data.buckets ?? []);
  const flowName = flows.data?.data.find((flow) => flow.id === flowId)?.name ?? "all flows";
  return (
    <section>
      <h1>Metrics</h1>
      <div className="filters">
        <label>
          Over the last{" "}
          <select value={span} onChange={(e) => setSpan(e.target.value as "hour" | "day")}>
            <option value="hour">hour</option>
            <option value="day">day</option>
          </select>
        </label>
        <label>
          Flow{" "}
          <select value={flowId} onChange={(e) => setFlowId(e.target.value)}>
            <option value="">all flows</option>
            {flows.data?.data.map((flow) => (
              <option key={flow.id} value={flow.id}>
                {flow.name}
              </option>
            ))}
          </select>
        </label>
      </div>
      {activity.error && <div role="alert">{problemOf(activity.error).message}</div>}
      <table className="totals">
        <caption>
          Totals over the last {span} for {flowName}
        </caption>
        <thead>
          <tr>
            <th scope="col">Accepted</th>
            <th scope="col">Succeeded</th>
            <th scope="col">Failed</th>
            <th scope="col">Webhook deliveries</th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <td>{totalOf(series.accepted)}</td>
            <td>{totalOf(series.succeeded)}</td>
            <td>{totalOf(series.failed)}</td>
            <td>{totalOf(series.deliveries)}</td>
          </tr>
        </tbody>
      </table>
      <ActivityChart series={series} title={`Runs per ${span === "hour" ? "minute" : "15 minutes"}, ${flowName}`} />
    </section>
  );
}

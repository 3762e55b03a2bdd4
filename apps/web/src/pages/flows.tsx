import { useQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { api } from "../api/client.ts";
import { problemOf } from "../ui/problem.ts";

export function FlowsPage() {
  const flows = useQuery({ queryKey: ["flows"], queryFn: () => api.flows.list.query() });
  return (
    <section>
      <div className="page-head">
        <h1>Flows</h1>
        <Link to="/console/flows/new" className="button">
          New flow
        </Link>
      </div>
      {flows.error && <div role="alert">{problemOf(flows.error).message}</div>}
      {flows.data && flows.data.data.length === 0 && <p>No flows yet.</p>}
      {flows.data && flows.data.data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Trigger</th>
              <th scope="col">Active</th>
              <th scope="col">Revision</th>
            </tr>
          </thead>
          <tbody>
            {flows.data.data.map((flow) => (
              <tr key={flow.id}>
                <td>
                  <Link to="/console/flows/$flowId" params={{ flowId: flow.id }}>
                    {flow.name}
                  </Link>
                </td>
                <td>{flow.trigger.type}</td>
                <td>{flow.active ? "yes" : "no"}</td>
                <td>{flow.revision}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

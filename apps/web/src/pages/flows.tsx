import { useSuspenseQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { flowQueries } from "../api/queries.ts";
import { RowsTable } from "../ui/list-page.tsx";

export function FlowsPage() {
  const flows = useSuspenseQuery(flowQueries.list()).data.data;
  return (
    <section>
      <div className="page-head">
        <h1>Flows</h1>
        <Link to="/console/flows/new" className="button">
          New flow
        </Link>
      </div>
      {flows.length === 0 ? (
        <p>No flows yet.</p>
      ) : (
        <RowsTable
          rows={flows}
          rowKey={(flow) => flow.id}
          columns={[
            {
              header: "Name",
              cell: (flow) => (
                <Link to="/console/flows/$flowId" params={{ flowId: flow.id }}>
                  {flow.name}
                </Link>
              ),
            },
            { header: "Trigger", cell: (flow) => flow.trigger.type },
            { header: "Active", cell: (flow) => (flow.active ? "yes" : "no") },
            { header: "Revision", cell: (flow) => flow.revision },
          ]}
        />
      )}
    </section>
  );
}

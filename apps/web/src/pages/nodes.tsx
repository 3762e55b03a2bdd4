import { useSuspenseQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { nodeQueries } from "../api/queries.ts";
import { TextField } from "../ui/form.tsx";
import { JsonCreateForm } from "../ui/json-create-form.tsx";
import { typedJson } from "../ui/json-field.ts";
import { ListPage, useListChange } from "../ui/list-page.tsx";
import { problemOf } from "../ui/problem.ts";

const EXAMPLE = {
  name: "charge",
  node_type: "function",
  subject: "transform",
  payload: { amount: "{{trigger.amount}}" },
  options: { timeout: 30000, attempts: 1, backoff_ms: 1000 },
};

/** Node templates: steps written once and referenced by flows as `nodes.<id>`. */
export function NodesPage() {
  const list = nodeQueries.list();
  const nodes = useSuspenseQuery(list).data.data;
  const [collection, setCollection] = useState("default");
  const create = useListChange(list, (data: unknown) =>
    api.hub.nodes.create.mutate({ collection, data: typedJson(data) }),
  );
  const problem = create.error ? problemOf(create.error) : null;
  return (
    <ListPage
      title="Node templates"
      list={list}
      rows={nodes}
      rowKey={(node) => node.id}
      columns={[
        { header: "Name", cell: (node) => node.data.name },
        { header: "Reference", cell: (node) => <code>nodes.{node.id}</code> },
        { header: "Subject", cell: (node) => node.data.subject },
      ]}
      remove={{
        what: (node) => `template ${node.data.name}`,
        run: (node) => api.hub.nodes.delete.mutate({ id: node.id }),
      }}
      empty="No templates yet."
    >
      <JsonCreateForm
        label="Template (JSON)"
        initial={EXAMPLE}
        submitLabel="Create template"
        problem={problem}
        pending={create.isPending}
        onSubmit={(data) => create.mutate(data)}
      >
        <TextField label="Collection" error={problem?.fields.collection} value={collection} onChange={setCollection} />
      </JsonCreateForm>
    </ListPage>
  );
}

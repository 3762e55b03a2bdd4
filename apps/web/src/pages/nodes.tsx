import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { DeleteButton, TextField } from "../ui/form.tsx";
import { JsonCreateForm } from "../ui/json-create-form.tsx";
import { typedJson } from "../ui/json-field.ts";
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
  const queryClient = useQueryClient();
  const nodes = useQuery({ queryKey: ["nodes"], queryFn: () => api.hub.nodes.list.query({}) });
  const [collection, setCollection] = useState("default");
  const create = useMutation({
    mutationFn: (data: unknown) => api.hub.nodes.create.mutate({ collection, data: typedJson(data) }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["nodes"] }),
  });
  const remove = useMutation({
    mutationFn: (id: string) => api.hub.nodes.delete.mutate({ id }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["nodes"] }),
  });
  const problem = create.error ? problemOf(create.error) : null;
  return (
    <section>
      <h1>Node templates</h1>
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
      {remove.error && <div role="alert">{problemOf(remove.error).message}</div>}
      {nodes.data && nodes.data.data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Reference</th>
              <th scope="col">Subject</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {nodes.data.data.map((node) => (
              <tr key={node.id}>
                <td>{node.data.name}</td>
                <td>
                  <code>nodes.{node.id}</code>
                </td>
                <td>{node.data.subject}</td>
                <td>
                  <DeleteButton what={`template ${node.data.name}`} onClick={() => remove.mutate(node.id)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

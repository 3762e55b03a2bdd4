import { GATEWAY_METHODS, type GatewayMethod } from "@platform/client";
import { useQuery, useSuspenseQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { flowQueries, gatewayQueries } from "../api/queries.ts";
import { ActionForm } from "../ui/action-form.tsx";
import { DeleteButton, Field, TextField } from "../ui/form.tsx";
import { JsonCreateForm } from "../ui/json-create-form.tsx";
import { typedJson } from "../ui/json-field.ts";
import { useListChange } from "../ui/list-page.tsx";
import { problemOf } from "../ui/problem.ts";

/** A gateway's mappings: method and path to the flow that answers them. */
function Mappings({ topic }: { topic: string }) {
  const list = gatewayQueries.mappings(topic);
  const mappings = useQuery(list);
  const flows = useSuspenseQuery(flowQueries.list()).data.data;
  const [method, setMethod] = useState<GatewayMethod>("GET");
  const [path, setPath] = useState("/");
  const [flowId, setFlowId] = useState("");
  const add = useListChange(list, () =>
    api.gateway.mappings.create.mutate({ gateway_topic: topic, method, path, flow_id: flowId }),
  );
  const remove = useListChange(list, (mapping: { method: GatewayMethod; path: string }) =>
    api.gateway.mappings.delete.mutate({ gateway_topic: topic, ...mapping }),
  );
  const failure = add.error ?? remove.error ?? mappings.error;
  const problem = failure ? problemOf(failure) : null;
  return (
    <div className="mappings">
      <ActionForm
        className="inline-form"
        onSubmit={add.mutate}
        pending={add.isPending}
        problem={problem}
        submitLabel="Add mapping"
      >
        <Field label="Method">
          {(input) => (
            <select
              {...input}
              value={method}
              onChange={(e) => setMethod(GATEWAY_METHODS.find((m) => m === e.target.value) ?? method)}
            >
              {GATEWAY_METHODS.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
          )}
        </Field>
        <TextField label="Path" error={problem?.fields.path} value={path} onChange={setPath} />
        <Field label="Flow" error={problem?.fields.flow_id}>
          {(input) => (
            <select {...input} value={flowId} onChange={(e) => setFlowId(e.target.value)} required>
              <option value="">choose a flow</option>
              {flows.map((flow) => (
                <option key={flow.id} value={flow.id}>
                  {flow.name}
                </option>
              ))}
            </select>
          )}
        </Field>
      </ActionForm>
      <ul>
        {mappings.data?.data.map((mapping) => (
          <li key={`${mapping.method} ${mapping.path}`}>
            <code>
              {mapping.method} {mapping.path}
            </code>{" "}
            → {flows.find((flow) => flow.id === mapping.flow_id)?.name ?? mapping.flow_id}{" "}
            <DeleteButton
              what={`mapping ${mapping.method} ${mapping.path}`}
              onClick={() => remove.mutate({ method: mapping.method, path: mapping.path })}
            />
          </li>
        ))}
      </ul>
    </div>
  );
}

/** HTTP gateways: a public URL per gateway whose mappings start flows that answer. */
export function GatewaysPage() {
  const list = gatewayQueries.list();
  const gateways = useSuspenseQuery(list).data.data;
  const create = useListChange(list, (body: unknown) => api.gateway.create.mutate(typedJson(body)));
  return (
    <section>
      <h1>Gateways</h1>
      <JsonCreateForm
        label="New gateway (JSON)"
        initial={{ name: "orders api", description: "" }}
        submitLabel="Create gateway"
        problem={create.error ? problemOf(create.error) : null}
        pending={create.isPending}
        onSubmit={(body) => create.mutate(body)}
      />
      {gateways.map((gateway) => (
        <article key={gateway.subject} className="gateway">
          <h2>{gateway.name}</h2>
          <p>
            <code>{gateway.url}</code> {gateway.active ? "" : "(inactive)"}
          </p>
          <Mappings topic={gateway.subject} />
        </article>
      ))}
    </section>
  );
}

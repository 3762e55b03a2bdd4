import { GATEWAY_METHODS, type GatewayMethod } from "@platform/client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { DeleteButton, Field, FormProblem, TextField } from "../ui/form.tsx";
import { JsonCreateForm } from "../ui/json-create-form.tsx";
import { typedJson } from "../ui/json-field.ts";
import { problemOf } from "../ui/problem.ts";

/** A gateway's mappings: method and path to the flow that answers them. */
function Mappings({ topic }: { topic: string }) {
  const queryClient = useQueryClient();
  const mappings = useQuery({
    queryKey: ["mappings", topic],
    queryFn: () => api.gateway.mappings.list.query({ gateway_topic: topic }),
  });
  const flows = useQuery({ queryKey: ["flows"], queryFn: () => api.flows.list.query() });
  const [method, setMethod] = useState<GatewayMethod>("GET");
  const [path, setPath] = useState("/");
  const [flowId, setFlowId] = useState("");
  const add = useMutation({
    mutationFn: () => api.gateway.mappings.create.mutate({ gateway_topic: topic, method, path, flow_id: flowId }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["mappings", topic] }),
  });
  const remove = useMutation({
    mutationFn: (mapping: { method: GatewayMethod; path: string }) =>
      api.gateway.mappings.delete.mutate({ gateway_topic: topic, ...mapping }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["mappings", topic] }),
  });
  const problem = add.error ? problemOf(add.error) : remove.error ? problemOf(remove.error) : null;
  return (
    <div className="mappings">
      <form
        className="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          add.mutate();
        }}
      >
        <FormProblem problem={problem} />
        <Field label="Method">
          {(input) => (
            <select
              {...input}
              value={method}
              onChange={(e) => setMethod(GATEWAY_METHODS.find((m) => m === e.target.value) ?? "GET")}
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
              {flows.data?.data.map((flow) => (
                <option key={flow.id} value={flow.id}>
                  {flow.name}
                </option>
              ))}
            </select>
          )}
        </Field>
        <button type="submit" disabled={add.isPending}>
          Add mapping
        </button>
      </form>
      <ul>
        {mappings.data?.data.map((mapping) => (
          <li key={`${mapping.method} ${mapping.path}`}>
            <code>
              {mapping.method} {mapping.path}
            </code>{" "}
            → {flows.data?.data.find((flow) => flow.id === mapping.flow_id)?.name ?? mapping.flow_id}{" "}
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
  const queryClient = useQueryClient();
  const gateways = useQuery({ queryKey: ["gateways"], queryFn: () => api.gateway.list.query() });
  const create = useMutation({
    mutationFn: (body: unknown) => api.gateway.create.mutate(typedJson(body)),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["gateways"] }),
  });
  const problem = create.error ? problemOf(create.error) : null;
  return (
    <section>
      <h1>Gateways</h1>
      <JsonCreateForm
        label="New gateway (JSON)"
        initial={{ name: "orders api", description: "" }}
        submitLabel="Create gateway"
        problem={problem}
        pending={create.isPending}
        onSubmit={(body) => create.mutate(body)}
      />
      {gateways.error && <div role="alert">{problemOf(gateways.error).message}</div>}
      {gateways.data?.data.map((gateway) => (
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

import type { RouterOutputs } from "@platform/client";
import { useQuery } from "@tanstack/react-query";
import { useNavigate } from "@tanstack/react-router";
import { useState } from "react";
import { flowQueries, registryQueries } from "../api/queries.ts";
import { ActionForm } from "../ui/action-form.tsx";
import { Field, TextField } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";
import { mcpCallStep } from "./mcp-step.ts";

type Server = RouterOutputs["hub"]["registry"]["list"]["servers"][number];
type Tool = RouterOutputs["hub"]["registry"]["tools"]["data"]["tools"][number];

/** A remote as published: its transport and address, whatever else it carries. */
const remoteOf = (remote: Record<string, unknown>) => ({
  type: typeof remote.type === "string" ? remote.type : "unknown",
  url: typeof remote.url === "string" ? remote.url : "",
});

/** The public registry of MCP tool servers, searched as the person types. */
export function RegistryPage() {
  const [search, setSearch] = useState("");
  const [asked, setAsked] = useState("");
  const results = useQuery({
    ...registryQueries.search(asked),
    placeholderData: (previous) => previous,
  });
  return (
    <section>
      <h1>MCP registry</h1>
      <search>
        <ActionForm className="inline-form" onSubmit={() => setAsked(search)} submitLabel="Search">
          <TextField label="Search tool servers" type="search" value={search} onChange={setSearch} />
        </ActionForm>
      </search>
      {results.error && <div role="alert">{problemOf(results.error).message}</div>}
      {results.data?.servers.length === 0 && <p>No tool server matches “{asked}”.</p>}
      <ul className="servers">
        {results.data?.servers.map((server) => (
          <ServerItem key={`${server.name}@${server.version}`} server={server} />
        ))}
      </ul>
    </section>
  );
}

function ServerItem({ server }: { server: Server }) {
  const remotes = server.remotes.map(remoteOf);
  const callable = remotes.some((remote) => remote.type === "streamable-http");
  return (
    <li>
      <strong>{server.name}</strong> <span className="hint">{server.version}</span>
      <p>{server.description}</p>
      {remotes.length === 0 ? (
        <p className="hint">No remote: published as packages to run locally.</p>
      ) : (
        <ul className="remotes" aria-label={`Remotes of ${server.name}`}>
          {remotes.map((remote) => (
            <li key={`${remote.type} ${remote.url}`}>
              <span className="tag">{remote.type}</span> <code>{remote.url}</code>
            </li>
          ))}
        </ul>
      )}
      {callable && <ServerTools name={server.name} />}
    </li>
  );
}

/**
 * A server's tools, asked when the person opens them (with a credential when the server
 * needs one): each can be used in a flow.
 */
function ServerTools({ name }: { name: string }) {
  const [authorization, setAuthorization] = useState("");
  const [asked, setAsked] = useState<{ authorization: string } | null>(null);
  const headers: Record<string, string> = asked?.authorization ? { authorization: asked.authorization } : {};
  const tools = useQuery({
    ...registryQueries.tools(name, headers),
    enabled: asked !== null,
    retry: false,
  });
  return (
    <details className="server-tools">
      <summary>Tools of {name}</summary>
      <ActionForm
        className="inline-form"
        aria-label={`List the tools of ${name}`}
        onSubmit={() => setAsked({ authorization })}
        submitLabel={asked ? "List again" : "List tools"}
        pending={tools.isFetching}
      >
        <TextField
          label="Authorization header (optional)"
          hint="For a server that needs a credential, e.g. Bearer {{secrets.token}}"
          autoComplete="off"
          value={authorization}
          onChange={setAuthorization}
        />
      </ActionForm>
      {tools.error && <div role="alert">{problemOf(tools.error).message}</div>}
      {tools.data && tools.data.data.tools.length === 0 && <p>The server lists no tools.</p>}
      {tools.data && (
        <ul className="tools">
          {tools.data.data.tools.map((tool) => (
            <ToolItem key={tool.name} server={name} tool={tool} headers={headers} />
          ))}
        </ul>
      )}
    </details>
  );
}

/** The arguments a tool takes, in a line: `a (number, required), note (string)`. */
function argumentsLine(schema: Tool["inputSchema"]): string {
  const properties = (schema.properties ?? {}) as Record<string, { type?: unknown }>;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const parts = Object.entries(properties).map(([key, property]) => {
    const type = typeof property?.type === "string" ? property.type : "any";
    return `${key} (${type}${required.has(key) ? ", required" : ""})`;
  });
  return parts.length > 0 ? parts.join(", ") : "none";
}

const NEW_FLOW = "";

function ToolItem({ server, tool, headers }: { server: string; tool: Tool; headers: Record<string, string> }) {
  const [choosing, setChoosing] = useState(false);
  const [flowId, setFlowId] = useState(NEW_FLOW);
  const navigate = useNavigate();
  const flows = useQuery({ ...flowQueries.list(), enabled: choosing });
  const use = () => {
    const step = JSON.stringify(mcpCallStep(server, tool, headers));
    if (flowId === NEW_FLOW) return navigate({ to: "/console/flows/new", search: { add_step: step } });
    return navigate({ to: "/console/flows/$flowId/edit", params: { flowId }, search: { add_step: step } });
  };
  return (
    <li>
      <strong>
        <code>{tool.name}</code>
      </strong>
      {typeof tool.description === "string" && tool.description && <p>{tool.description}</p>}
      <p className="hint">Arguments: {argumentsLine(tool.inputSchema)}</p>
      {choosing ? (
        <ActionForm
          className="inline-form"
          aria-label={`Use ${tool.name} in a flow`}
          onSubmit={() => void use()}
          submitLabel="Add the step"
          after={
            <button type="button" className="secondary" onClick={() => setChoosing(false)}>
              Cancel
            </button>
          }
        >
          <Field label={`Flow for ${tool.name}`}>
            {(input) => (
              <select {...input} value={flowId} onChange={(e) => setFlowId(e.target.value)}>
                <option value={NEW_FLOW}>a new flow</option>
                {flows.data?.data.map((flow) => (
                  <option key={flow.id} value={flow.id}>
                    {flow.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </ActionForm>
      ) : (
        <button
          type="button"
          className="secondary small"
          aria-label={`Use in a flow: ${tool.name}`}
          onClick={() => setChoosing(true)}
        >
          Use in a flow
        </button>
      )}
    </li>
  );
}

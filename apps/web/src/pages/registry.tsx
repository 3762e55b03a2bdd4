import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { registryQueries } from "../api/queries.ts";
import { ActionForm } from "../ui/action-form.tsx";
import { TextField } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";

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
          <li key={`${server.name}@${server.version}`}>
            <strong>{server.name}</strong> <span className="hint">{server.version}</span>
            <p>{server.description}</p>
          </li>
        ))}
      </ul>
    </section>
  );
}

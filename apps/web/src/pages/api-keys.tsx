import { useSuspenseQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { apiKeyQueries } from "../api/queries.ts";
import { ActionForm } from "../ui/action-form.tsx";
import { CopyButton } from "../ui/copy-button.tsx";
import { Field, TextField } from "../ui/form.tsx";
import { ListPage, useListChange } from "../ui/list-page.tsx";
import { problemOf } from "../ui/problem.ts";

/** Lines of `METHODS /path/pattern` (or a bare pattern), one per line; none for an unrestricted key. */
const pathsOf = (text: string) =>
  text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);

export function ApiKeysPage() {
  const list = apiKeyQueries.list();
  const keys = useSuspenseQuery(list).data.data;
  const [name, setName] = useState("");
  const [paths, setPaths] = useState("");
  const create = useListChange(
    list,
    () => {
      const allowed = pathsOf(paths);
      return api.accounts.apiKeys.create.mutate({ name, ...(allowed.length ? { allowed_paths: allowed } : {}) });
    },
    () => {
      setName("");
      setPaths("");
    },
  );
  const problem = create.error ? problemOf(create.error) : null;
  const created = create.data?.data;
  return (
    <ListPage
      title="API keys"
      list={list}
      rows={keys}
      rowKey={(key) => key.id}
      columns={[
        { header: "Name", cell: (key) => key.name },
        { header: "Starts with", cell: (key) => <code>{key.prefix}…</code> },
        {
          header: "Allowed paths",
          cell: (key) => (key.allowed_paths ? key.allowed_paths.join(", ") : "everything its creator may do"),
        },
        { header: "Created", cell: (key) => new Date(key.created * 1000).toLocaleString() },
      ]}
      remove={{ what: (key) => `key ${key.name}`, run: (key) => api.accounts.apiKeys.delete.mutate({ id: key.id }) }}
      empty="No API keys yet."
    >
      {created && (
        <div className="notice" role="status">
          <p>Key “{created.name}” created. Copy it now: it is shown only this once.</p>
          <code className="secret-once">{created.key}</code> <CopyButton text={created.key} label="Copy key" />
        </div>
      )}
      <ActionForm onSubmit={create.mutate} pending={create.isPending} problem={problem} submitLabel="Create key">
        <TextField label="Name" error={problem?.fields.name} name="name" value={name} onChange={setName} required />
        <Field
          label="Allowed paths"
          error={Object.entries(problem?.fields ?? {}).find(([field]) => field.startsWith("allowed_paths"))?.[1]}
          hint="One per line: methods and a path pattern (GET,PUT /storage/kv/orders/*), or a bare pattern for every method. Empty: the key may do all you may."
        >
          {(input) => (
            <textarea
              {...input}
              name="allowed_paths"
              rows={3}
              value={paths}
              onChange={(e) => setPaths(e.target.value)}
            />
          )}
        </Field>
      </ActionForm>
    </ListPage>
  );
}

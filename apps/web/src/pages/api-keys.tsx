import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { CopyButton } from "../ui/copy-button.tsx";
import { DeleteButton, Field, FormProblem, TextField } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";

/** Lines of `METHODS /path/pattern` (or a bare pattern), one per line; none for an unrestricted key. */
const pathsOf = (text: string) =>
  text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);

export function ApiKeysPage() {
  const queryClient = useQueryClient();
  const keys = useQuery({ queryKey: ["api-keys"], queryFn: () => api.accounts.apiKeys.list.query() });
  const [name, setName] = useState("");
  const [paths, setPaths] = useState("");
  const create = useMutation({
    mutationFn: () => {
      const allowed = pathsOf(paths);
      return api.accounts.apiKeys.create.mutate({ name, ...(allowed.length ? { allowed_paths: allowed } : {}) });
    },
    onSuccess: async () => {
      setName("");
      setPaths("");
      await queryClient.invalidateQueries({ queryKey: ["api-keys"] });
    },
  });
  const remove = useMutation({
    mutationFn: (id: string) => api.accounts.apiKeys.delete.mutate({ id }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["api-keys"] }),
  });
  const problem = create.error ? problemOf(create.error) : null;
  const created = create.data?.data;
  return (
    <section>
      <h1>API keys</h1>
      {created && (
        <div className="notice" role="status">
          <p>Key “{created.name}” created. Copy it now: it is shown only this once.</p>
          <code className="secret-once">{created.key}</code> <CopyButton text={created.key} label="Copy key" />
        </div>
      )}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate();
        }}
      >
        <FormProblem problem={problem} />
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
        <button type="submit" disabled={create.isPending}>
          Create key
        </button>
      </form>
      {remove.error && <div role="alert">{problemOf(remove.error).message}</div>}
      {keys.data && (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Starts with</th>
              <th scope="col">Allowed paths</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.data.data.map((key) => (
              <tr key={key.id}>
                <td>{key.name}</td>
                <td>
                  <code>{key.prefix}…</code>
                </td>
                <td>{key.allowed_paths ? key.allowed_paths.join(", ") : "everything its creator may do"}</td>
                <td>{new Date(key.created * 1000).toLocaleString()}</td>
                <td>
                  <DeleteButton what={`key ${key.name}`} onClick={() => remove.mutate(key.id)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

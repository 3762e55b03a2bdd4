import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { DeleteButton, FormProblem, Notice, TextField } from "../ui/form.tsx";
import { problemOf } from "../ui/problem.ts";

/** The account's secrets by key: a value is written here and never shown again. */
export function SecretsPage() {
  const queryClient = useQueryClient();
  const secrets = useQuery({ queryKey: ["secrets"], queryFn: () => api.secrets.list.query() });
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const [saved, setSaved] = useState("");
  const put = useMutation({
    mutationFn: () => api.secrets.put.mutate({ key, value }),
    onSuccess: async () => {
      setSaved(key);
      setKey("");
      // The value leaves the page once it is saved.
      setValue("");
      await queryClient.invalidateQueries({ queryKey: ["secrets"] });
    },
  });
  const remove = useMutation({
    mutationFn: (secretKey: string) => api.secrets.delete.mutate({ key: secretKey }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["secrets"] }),
  });
  const problem = put.error ? problemOf(put.error) : null;
  return (
    <section>
      <h1>Secrets</h1>
      <p className="hint">Flows read them as {"{{secrets.<key>}}"}. Values are sealed at rest and never shown again.</p>
      <form
        className="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          put.mutate();
        }}
      >
        <FormProblem problem={problem} />
        <TextField label="Key" error={problem?.fields.key} name="key" value={key} onChange={setKey} required />
        <TextField
          label="Value"
          error={problem?.fields.value}
          name="value"
          type="password"
          autoComplete="off"
          value={value}
          onChange={setValue}
          required
        />
        <button type="submit" disabled={put.isPending}>
          Save secret
        </button>
      </form>
      {saved && <Notice>Secret “{saved}” saved.</Notice>}
      {remove.error && <div role="alert">{problemOf(remove.error).message}</div>}
      {secrets.error && <div role="alert">{problemOf(secrets.error).message}</div>}
      {secrets.data && (
        <table>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {secrets.data.data.map((secret) => (
              <tr key={secret.key}>
                <td>
                  <code>{secret.key}</code>
                </td>
                <td>
                  <DeleteButton what={`secret ${secret.key}`} onClick={() => remove.mutate(secret.key)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {secrets.data?.data.length === 0 && <p>No secrets yet.</p>}
    </section>
  );
}

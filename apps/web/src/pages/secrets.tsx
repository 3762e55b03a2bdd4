import { useSuspenseQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { secretQueries } from "../api/queries.ts";
import { ActionForm } from "../ui/action-form.tsx";
import { Notice, TextField } from "../ui/form.tsx";
import { ListPage, useListChange } from "../ui/list-page.tsx";
import { problemOf } from "../ui/problem.ts";

/** The account's secrets by key: a value is written here and never shown again. */
export function SecretsPage() {
  const list = secretQueries.list();
  const secrets = useSuspenseQuery(list).data.data;
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const [saved, setSaved] = useState("");
  const put = useListChange(
    list,
    () => api.secrets.put.mutate({ key, value }),
    () => {
      setSaved(key);
      setKey("");
      // The value leaves the page once it is saved.
      setValue("");
    },
  );
  const problem = put.error ? problemOf(put.error) : null;
  return (
    <ListPage
      title="Secrets"
      list={list}
      rows={secrets}
      rowKey={(secret) => secret.key}
      columns={[{ header: "Key", cell: (secret) => <code>{secret.key}</code> }]}
      remove={{
        what: (secret) => `secret ${secret.key}`,
        run: (secret) => api.secrets.delete.mutate({ key: secret.key }),
      }}
      empty="No secrets yet."
    >
      <p className="hint">Flows read them as {"{{secrets.<key>}}"}. Values are sealed at rest and never shown again.</p>
      <ActionForm
        className="inline-form"
        onSubmit={put.mutate}
        pending={put.isPending}
        problem={problem}
        submitLabel="Save secret"
      >
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
      </ActionForm>
      {saved && <Notice>Secret “{saved}” saved.</Notice>}
    </ListPage>
  );
}

import { useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { storageQueries } from "../api/queries.ts";
import { ActionForm } from "../ui/action-form.tsx";
import { Field, TextField } from "../ui/form.tsx";
import { parseJson, typedJson } from "../ui/json-field.ts";
import { JsonView } from "../ui/json-view.tsx";
import { useListChange } from "../ui/list-page.tsx";
import { problemOf } from "../ui/problem.ts";

/** A stream's messages, newest page first: read, and publish to. */
function StreamBrowser({ name }: { name: string }) {
  const list = storageQueries.stream(name);
  const messages = useQuery({ ...list, refetchInterval: 2000 });
  const [subject, setSubject] = useState("orders.created");
  const [body, setBody] = useState('{"hello": "world"}');
  const parsed = parseJson(body);
  const publish = useListChange(list, () =>
    api.storage.streams.publish.mutate({
      name,
      stream: name,
      subject,
      body: typedJson("value" in parsed ? parsed.value : {}),
    }),
  );
  const problem = publish.error ? problemOf(publish.error) : messages.error ? problemOf(messages.error) : null;
  return (
    <div>
      <ActionForm
        onSubmit={publish.mutate}
        pending={publish.isPending}
        disabled={"error" in parsed}
        problem={problem}
        submitLabel="Publish"
      >
        <TextField label="Subject" error={problem?.fields.subject} value={subject} onChange={setSubject} required />
        <Field
          label="Message (a JSON object)"
          error={"error" in parsed ? `Not JSON yet: ${parsed.error}` : problem?.fields.body}
        >
          {(input) => <textarea {...input} rows={3} value={body} onChange={(e) => setBody(e.target.value)} />}
        </Field>
      </ActionForm>
      <h3>Messages</h3>
      {messages.data?.data.length === 0 && <p>No messages.</p>}
      <ol className="messages">
        {messages.data?.data.map((message) => (
          <li key={message.seq}>
            <strong>#{message.seq}</strong> {new Date(message.ts).toLocaleString()}
            <JsonView value={message.body} label={`message ${message.seq}`} open={false} />
          </li>
        ))}
      </ol>
    </div>
  );
}

/** A bucket's keys; a key's value opens on demand. */
function BucketBrowser({ bucket }: { bucket: string }) {
  const list = storageQueries.bucket(bucket);
  const keys = useQuery(list);
  const [open, setOpen] = useState<string | null>(null);
  const value = useQuery({ ...storageQueries.value(bucket, open ?? ""), enabled: open !== null });
  const [key, setKey] = useState("");
  const [text, setText] = useState('"value"');
  const parsed = parseJson(text);
  const put = useListChange(list, () =>
    api.storage.kv.keys.put.mutate({ bucket, key, value: "value" in parsed ? parsed.value : text }),
  );
  const problem = put.error ? problemOf(put.error) : keys.error ? problemOf(keys.error) : null;
  return (
    <div>
      <ActionForm
        className="inline-form"
        onSubmit={put.mutate}
        pending={put.isPending}
        disabled={"error" in parsed}
        problem={problem}
        submitLabel="Write key"
      >
        <TextField label="Key" error={problem?.fields.key} value={key} onChange={setKey} required />
        <TextField
          label="Value (JSON)"
          error={"error" in parsed ? "Not JSON yet" : problem?.fields.value}
          value={text}
          onChange={setText}
        />
      </ActionForm>
      <h3>Keys</h3>
      {keys.data?.data.length === 0 && <p>No keys.</p>}
      <ul className="keys">
        {keys.data?.data.map((name) => (
          <li key={name}>
            <button
              type="button"
              className="link"
              aria-expanded={open === name}
              onClick={() => setOpen(open === name ? null : name)}
            >
              {name}
            </button>
            {open === name && value.data && <JsonView value={value.data.value} label={name} />}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** Streams and key-value buckets, opened by name. */
export function StoragePage() {
  const [kind, setKind] = useState<"stream" | "bucket">("stream");
  const [name, setName] = useState("");
  const [opened, setOpened] = useState<{ kind: "stream" | "bucket"; name: string } | null>(null);
  const create = useMutation({
    mutationFn: () =>
      kind === "stream" ? api.storage.streams.put.mutate({ name }) : api.storage.kv.put.mutate({ bucket: name }),
    onSuccess: () => setOpened({ kind, name }),
  });
  const problem = create.error ? problemOf(create.error) : null;
  return (
    <section>
      <h1>Storage</h1>
      <ActionForm
        className="inline-form"
        onSubmit={() => setOpened({ kind, name })}
        problem={problem}
        submitLabel="Open"
        after={
          <button type="button" className="secondary" onClick={() => create.mutate()} disabled={!name}>
            Create
          </button>
        }
      >
        <Field label="Kind">
          {(input) => (
            <select {...input} value={kind} onChange={(e) => setKind(e.target.value as "stream" | "bucket")}>
              <option value="stream">stream</option>
              <option value="bucket">key-value bucket</option>
            </select>
          )}
        </Field>
        <TextField
          label="Name"
          error={problem?.fields.name ?? problem?.fields.bucket}
          value={name}
          onChange={setName}
          required
        />
      </ActionForm>
      {opened && (
        <>
          <h2>
            {opened.kind === "stream" ? "Stream" : "Bucket"} {opened.name}
          </h2>
          {opened.kind === "stream" ? (
            <StreamBrowser key={opened.name} name={opened.name} />
          ) : (
            <BucketBrowser key={opened.name} bucket={opened.name} />
          )}
        </>
      )}
    </section>
  );
}

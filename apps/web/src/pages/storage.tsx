import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client.ts";
import { Field, FormProblem, TextField } from "../ui/form.tsx";
import { parseJson } from "../ui/json-field.ts";
import { JsonView } from "../ui/json-view.tsx";
import { problemOf } from "../ui/problem.ts";

/** A stream's messages, newest page first: read, and publish to. */
function StreamBrowser({ name }: { name: string }) {
  const queryClient = useQueryClient();
  const messages = useQuery({
    queryKey: ["stream", name],
    queryFn: () => api.storage.streams.list.query({ name, limit: 50 }),
    refetchInterval: 2000,
  });
  const [subject, setSubject] = useState("orders.created");
  const [body, setBody] = useState('{"hello": "world"}');
  const parsed = parseJson(body);
  const publish = useMutation({
    mutationFn: () =>
      api.storage.streams.publish.mutate({
        name,
        stream: name,
        subject,
        body: ("value" in parsed ? parsed.value : {}) as Record<string, unknown>,
      }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["stream", name] }),
  });
  const problem = publish.error ? problemOf(publish.error) : messages.error ? problemOf(messages.error) : null;
  return (
    <div>
      <FormProblem problem={problem} />
      <form
        onSubmit={(event) => {
          event.preventDefault();
          publish.mutate();
        }}
      >
        <TextField label="Subject" error={problem?.fields.subject} value={subject} onChange={setSubject} required />
        <Field
          label="Message (a JSON object)"
          error={"error" in parsed ? `Not JSON yet: ${parsed.error}` : problem?.fields.body}
        >
          {(input) => <textarea {...input} rows={3} value={body} onChange={(e) => setBody(e.target.value)} />}
        </Field>
        <button type="submit" disabled={publish.isPending || "error" in parsed}>
          Publish
        </button>
      </form>
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
  const queryClient = useQueryClient();
  const keys = useQuery({ queryKey: ["bucket", bucket], queryFn: () => api.storage.kv.keys.list.query({ bucket }) });
  const [open, setOpen] = useState<string | null>(null);
  const value = useQuery({
    queryKey: ["bucket", bucket, open],
    queryFn: () => api.storage.kv.keys.get.query({ bucket, key: open as string }),
    enabled: open !== null,
  });
  const [key, setKey] = useState("");
  const [text, setText] = useState('"value"');
  const parsed = parseJson(text);
  const put = useMutation({
    mutationFn: () => api.storage.kv.keys.put.mutate({ bucket, key, value: "value" in parsed ? parsed.value : text }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["bucket", bucket] }),
  });
  const problem = put.error ? problemOf(put.error) : keys.error ? problemOf(keys.error) : null;
  return (
    <div>
      <FormProblem problem={problem} />
      <form
        className="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          put.mutate();
        }}
      >
        <TextField label="Key" error={problem?.fields.key} value={key} onChange={setKey} required />
        <TextField
          label="Value (JSON)"
          error={"error" in parsed ? "Not JSON yet" : problem?.fields.value}
          value={text}
          onChange={setText}
        />
        <button type="submit" disabled={put.isPending || "error" in parsed}>
          Write key
        </button>
      </form>
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
      <form
        className="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          setOpened({ kind, name });
        }}
      >
        <FormProblem problem={problem} />
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
        <button type="submit">Open</button>
        <button type="button" className="secondary" onClick={() => create.mutate()} disabled={!name}>
          Create
        </button>
      </form>
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

/** JSON as a tree whose objects and arrays fold (native `<details>`: keyboard and screen readers work). */
export function JsonView({ value, label, open = true }: { value: unknown; label: string; open?: boolean }) {
  return (
    <section className="json" aria-label={label}>
      <JsonNode value={value} name={label} open={open} />
    </section>
  );
}

function JsonNode({ value, name, open }: { value: unknown; name: string; open: boolean }) {
  if (value === null || typeof value !== "object") {
    return (
      <div className="json-leaf">
        <span className="json-key">{name}</span>:{" "}
        <span className={`json-${typeof value}`}>{JSON.stringify(value)}</span>
      </div>
    );
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  return (
    <details open={open}>
      <summary>
        <span className="json-key">{name}</span>{" "}
        <span className="json-size">{Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`}</span>
      </summary>
      <div className="json-children">
        {entries.map(([key, child]) => (
          <JsonNode key={key} value={child} name={key} open={false} />
        ))}
      </div>
    </details>
  );
}

/** A step as the graph reads it: any JSON, of which names and control keys are drawn. */
type Step = Record<string, unknown>;

const asSteps = (value: unknown): Step[] =>
  Array.isArray(value) ? value.filter((s): s is Step => typeof s === "object" && s !== null) : [];

function kindOf(step: Step): string {
  if (step.switch) return "switch";
  if (step.for_each) return "for each";
  if (step.parallel) return "parallel";
  if (step.stop) return "stop";
  if (typeof step.node === "string") return step.node;
  return typeof step.subject === "string" ? step.subject : "step";
}

/** Named lists of nested steps: switch cases and default, a for-each's body, parallel branches, a catch. */
function branchesOf(step: Step): { label: string; steps: Step[] }[] {
  const branches: { label: string; steps: Step[] }[] = [];
  if (Array.isArray(step.switch)) {
    step.switch.forEach((branch, index) => {
      const when = (branch as { when?: unknown }).when;
      branches.push({ label: `case ${index + 1}: ${String(when ?? "")}`, steps: asSteps((branch as Step).steps) });
    });
    if (step.default) branches.push({ label: "default", steps: asSteps(step.default) });
  }
  if (step.for_each) branches.push({ label: `each of ${String(step.for_each)}`, steps: asSteps(step.steps) });
  if (step.parallel && typeof step.parallel === "object") {
    for (const [name, steps] of Object.entries(step.parallel as Record<string, unknown>)) {
      branches.push({ label: `branch ${name}`, steps: asSteps(steps) });
    }
  }
  if (step.catch) branches.push({ label: "on failure", steps: asSteps(step.catch) });
  return branches;
}

function StepList({ steps }: { steps: Step[] }) {
  return (
    <ol className="graph-list">
      {steps.map((step, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: a draft being typed may repeat a name; its place tells steps apart
        <li key={`${String(step.name)}:${index}`} className="graph-step">
          <div className="graph-node">
            <span className="graph-name">{String(step.name ?? `step ${index + 1}`)}</span>
            <span className="graph-kind">{kindOf(step)}</span>
            {typeof step.if === "string" && <span className="graph-if">if {step.if}</span>}
          </div>
          {branchesOf(step).length > 0 && (
            <div className="graph-branches">
              {branchesOf(step).map((branch) => (
                <div key={branch.label} className="graph-branch">
                  <span className="graph-label">{branch.label}</span>
                  <StepList steps={branch.steps} />
                </div>
              ))}
            </div>
          )}
        </li>
      ))}
    </ol>
  );
}

/** The steps as a graph: one after another, branches side by side. */
export function StepGraph({ steps }: { steps: unknown[] }) {
  const list = asSteps(steps);
  if (list.length === 0) return null;
  return (
    <figure className="graph" aria-label="Steps graph">
      <StepList steps={list} />
    </figure>
  );
}

import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import { DomainError } from "../errors.ts";
import { getNodes } from "../hub/nodes/nodes.ts";
import { type FieldPath, inspectPayload } from "../templates/index.ts";
import type { StoredStep } from "./revisions.ts";
import type { StepInput } from "./schemas.ts";

/**
 * Steps as they run: node references resolved into inline steps, checked across the flow.
 * Everything a run could only discover late is a 400 at save time, naming its field.
 */

/** A step in the flow's order, with what a problem in it is named by. */
interface CheckedStep {
  name: string;
  /** Null when it could not be resolved (an unknown node): its name still counts. */
  payload: Record<string, unknown> | null;
  /** Where the payload came from: `steps.2.payload`, or `steps.2.node` for a node reference. */
  origin: FieldPath;
  /** For a node reference: the node's subject, so a problem in its payload says which node. */
  node?: string;
}

const fieldText = (path: FieldPath) => path.join(".");

/** `nodes.<id>` → the node's id (UUIDs are stored lower-case). */
const nodeIdOf = (reference: string) => reference.slice("nodes.".length).toLowerCase();

/** Problems across steps: duplicate names, and `{{steps.<name>}}` naming no earlier step. */
export function crossStepProblems(steps: CheckedStep[]): string[] {
  const problems: string[] = [];
  const positions = new Map<string, number>();
  for (const [index, { name }] of steps.entries()) {
    const first = positions.get(name);
    if (first === undefined) positions.set(name, index);
    else problems.push(`steps.${index}.name: duplicate step name "${name}" (also steps.${first}.name)`);
  }
  for (const [index, { payload, origin, node }] of steps.entries()) {
    for (const { field, reference } of payload ? inspectPayload(payload).references : []) {
      if (reference.root !== "steps") continue;
      const [target = ""] = reference.path;
      const at = positions.get(target);
      let why: string | null = null;
      if (at === undefined) why = `refers to no step of this flow ("${target}")`;
      else if (at === index) why = "refers to its own step; a step sees only the steps before it";
      else if (at > index) why = `refers to step "${target}", which runs later; a step sees only the steps before it`;
      if (!why) continue;
      const where = node
        ? `${fieldText(origin)}: ${node} payload.${fieldText(field)}`
        : fieldText([...origin, ...field]);
      problems.push(`${where}: {{${reference.expression}}} ${why}`);
    }
  }
  return problems;
}

/**
 * The steps to store in a revision: inline ones as given (defaults filled in), node
 * references replaced by the account's node as it is now. Throws a 400 naming every
 * unknown node, duplicate name and reference to a step that is not an earlier one.
 */
export async function resolveSteps(db: Kysely<Database>, accountId: string, steps: StepInput[]): Promise<StoredStep[]> {
  const nodeIds = steps.flatMap((step) => ("node" in step ? [nodeIdOf(step.node)] : []));
  const nodes = await getNodes(db, accountId, nodeIds);
  const problems: string[] = [];
  const checked: CheckedStep[] = [];
  const resolved: StoredStep[] = [];
  for (const [index, step] of steps.entries()) {
    if (!("node" in step)) {
      const { name, subject, payload, options } = step;
      resolved.push({ name, subject, payload, options });
      checked.push({ name, payload, origin: ["steps", index, "payload"] });
      continue;
    }
    const node = nodes.get(nodeIdOf(step.node));
    if (!node) {
      problems.push(`steps.${index}.node: no node template ${step.node} in this account`);
      checked.push({ name: step.name, payload: null, origin: ["steps", index, "node"] });
      continue;
    }
    const { subject, payload, options } = node.data;
    resolved.push({ name: step.name, subject, payload, options: { ...options } });
    checked.push({ name: step.name, payload, origin: ["steps", index, "node"], node: node.subject });
  }
  problems.push(...crossStepProblems(checked));
  if (problems.length > 0) throw new DomainError("validation_error", `invalid input: ${problems.join("; ")}`);
  return resolved;
}

import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import { DomainError } from "../errors.ts";
import { getNodes, type Node } from "../hub/nodes/nodes.ts";
import { respondPayloadProblems } from "../runs/tenant-answers.ts";
import { type FieldPath, inspectPayload, templateBudgetProblem } from "../templates/index.ts";
import type { StoredStep } from "./revisions.ts";
import type { StepInput } from "./schemas.ts";
import { childLists, isForEach, isStop, isSwitch } from "./step-tree.ts";

/**
 * Steps as they run: node references resolved into tasks, checked across the flow.
 * Everything a run could only discover late is a 400 at save time, naming its field by
 * its full path (`steps.2.switch.0.steps.1.payload.url`).
 */

/** Steps in a whole flow, every list counted: bounds the work of one save and one run's records. */
export const MAX_FLOW_STEPS = 500;

/** A field that holds templates, as a save checks it and names it. */
export interface TemplateField {
  /** `steps.2.payload`, `steps.0.if`; for a node reference `steps.2.node`. */
  origin: FieldPath;
  value: unknown;
  /** For a node reference: the node's subject, so a problem in its payload says which node. */
  node?: string;
}

/** A step in document order, with what its templates may see. */
interface CheckedStep {
  name: string;
  /** Where it is: `steps.2.switch.0.steps.1`. */
  path: FieldPath;
  /** The control steps it is inside, innermost last. */
  enclosing: string[];
  fields: TemplateField[];
  perItem: boolean;
  handler: boolean;
}

const fieldText = (path: FieldPath) => path.join(".");

/** `nodes.<id>` → the node's id (UUIDs are stored lower-case). */
const nodeIdOf = (reference: string) => reference.slice("nodes.".length).toLowerCase();

/** The template fields of a step itself (its lists excluded). */
function ownFields(step: StepInput, at: FieldPath): TemplateField[] {
  const fields: TemplateField[] = [];
  if ("if" in step && step.if !== undefined) fields.push({ origin: [...at, "if"], value: step.if });
  if (isSwitch(step)) {
    for (const [index, branch] of step.switch.entries()) {
      fields.push({ origin: [...at, "switch", index, "when"], value: branch.when });
    }
  }
  if (isForEach(step)) fields.push({ origin: [...at, "for_each"], value: step.for_each });
  if (isStop(step)) fields.push({ origin: [...at, "stop"], value: step.stop });
  if ("payload" in step) fields.push({ origin: [...at, "payload"], value: step.payload });
  return fields;
}

/** Why a reference from `from` (at `index`) may not name `target`, or null when it may. */
function referenceProblem(
  target: string,
  index: number,
  from: CheckedStep,
  positions: Map<string, number>,
): string | null {
  const at = positions.get(target);
  if (at === undefined) return `refers to no step of this flow ("${target}")`;
  if (at === index) return "refers to its own step; a step sees only the steps before it";
  if (from.enclosing.includes(target)) return `refers to step "${target}", which holds it and has not ended yet`;
  if (at > index) return `refers to step "${target}", which runs later; a step sees only the steps before it`;
  return null;
}

/**
 * Problems across steps: duplicate names, `{{steps.<name>}}` naming no earlier step,
 * `item`/`index` outside a for-each and `error` outside a handler, too many steps.
 */
export function crossStepProblems(steps: CheckedStep[]): string[] {
  const problems: string[] = [];
  if (steps.length > MAX_FLOW_STEPS) {
    problems.push(`steps: a flow holds at most ${MAX_FLOW_STEPS} steps in all its lists (this one ${steps.length})`);
  }
  const positions = new Map<string, number>();
  const first = new Map<string, FieldPath>();
  for (const [index, { name, path: here }] of steps.entries()) {
    const seen = first.get(name);
    if (seen === undefined) {
      positions.set(name, index);
      first.set(name, here);
    } else
      problems.push(
        `${fieldText([...here, "name"])}: duplicate step name "${name}" (also ${fieldText([...seen, "name"])})`,
      );
  }
  for (const [index, step] of steps.entries()) {
    for (const { origin, value, node } of step.fields) {
      for (const { field, reference } of inspectPayload(value).references) {
        let why: string | null = null;
        if (reference.root === "steps") why = referenceProblem(reference.path[0] ?? "", index, step, positions);
        else if ((reference.root === "item" || reference.root === "index") && !step.perItem) {
          why = "is only in scope inside a for_each";
        } else if (reference.root === "error" && !step.handler) why = "is only in scope inside catch and on_failure";
        if (!why) continue;
        const where = node
          ? `${fieldText(origin)}: ${node} payload.${fieldText(field)}`
          : fieldText([...origin, ...field]);
        problems.push(`${where}: {{${reference.expression}}} ${why}`);
      }
    }
  }
  return problems;
}

interface Resolution {
  nodes: Map<string, Node>;
  problems: string[];
  checked: CheckedStep[];
}

/** A list resolved: node references become the node's task as it is now; every step is recorded for the checks. */
function resolveList(
  list: StepInput[],
  at: FieldPath,
  context: { enclosing: string[]; perItem: boolean; handler: boolean },
  resolution: Resolution,
): StoredStep[] {
  return list.map((step, index): StoredStep => {
    const path = [...at, index];
    const entry: CheckedStep = { name: step.name, path, ...context, fields: [] };
    resolution.checked.push(entry);
    let resolved: StoredStep;
    if ("node" in step) {
      const node = resolution.nodes.get(nodeIdOf(step.node));
      const guards = step.if === undefined ? [] : [{ origin: [...path, "if"], value: step.if }];
      if (!node) {
        resolution.problems.push(`${fieldText([...path, "node"])}: no node template ${step.node} in this account`);
        entry.fields = guards.length > 0 ? guards : [{ origin: [...path, "node"], value: null }];
        resolved = {
          name: step.name,
          subject: "transform",
          payload: {},
          options: { timeout: 1, attempts: 1, backoff_ms: 1 },
        };
      } else {
        const { subject, payload, options } = node.data;
        entry.fields = [...guards, { origin: [...path, "node"], value: payload, node: node.subject }];
        // A node saved before the allow list of answer headers grew is checked again where it is copied.
        if (subject === "respond") {
          for (const { field, message } of respondPayloadProblems(payload)) {
            resolution.problems.push(
              `${fieldText([...path, "node"])}: ${node.subject} payload.${fieldText(field)}: ${message}`,
            );
          }
        }
        resolved = { name: step.name, subject, payload, options: { ...options } };
      }
      if (step.if !== undefined) resolved = { ...resolved, if: step.if };
    } else {
      entry.fields = ownFields(step, path);
      // A task's `node_type` says what it is in the saved form only.
      const { node_type: _, ...rest } = step as StepInput & { node_type?: string };
      resolved = rest as StoredStep;
    }
    // Each list of the step, resolved in its place (the handler last, as it runs last).
    const inner =
      isForEach(step) || "switch" in step || "parallel" in step ? [...context.enclosing, step.name] : context.enclosing;
    const withLists: Record<string, unknown> = { ...resolved };
    for (const list of childLists(step)) {
      const steps = resolveList(
        list.steps,
        [...path, ...list.field],
        {
          enclosing: list.handler ? context.enclosing : inner,
          perItem: context.perItem || Boolean(list.perItem),
          handler: context.handler || Boolean(list.handler),
        },
        resolution,
      );
      setAt(withLists, list.field, steps);
    }
    return withLists as unknown as StoredStep;
  });
}

/** Writes `value` at `field` inside `target`, copying what it passes through (the input stays as it was). */
function setAt(target: Record<string, unknown>, field: FieldPath, value: unknown): void {
  let at: Record<string, unknown> | unknown[] = target;
  for (const [index, key] of field.entries()) {
    const last = index === field.length - 1;
    const container = at as Record<string | number, unknown>;
    if (last) {
      container[key] = value;
      return;
    }
    const next = container[key];
    const copy = Array.isArray(next) ? [...next] : { ...(next as Record<string, unknown>) };
    container[key] = copy;
    at = copy;
  }
}

/**
 * The steps to store in a revision: inline ones as given (defaults filled in), node
 * references replaced by the account's node as it is now, in every list of the tree, and
 * the flow's `on_failure` steps likewise. Throws a 400 naming every unknown node, duplicate
 * name and reference a step cannot see. Also answers every template field, for the secret
 * checks of the save.
 */
export async function resolveSteps(
  db: Kysely<Database>,
  accountId: string,
  steps: StepInput[],
  onFailure: StepInput[],
): Promise<{ steps: StoredStep[]; onFailure: StoredStep[]; fields: TemplateField[] }> {
  const nodeIds: string[] = [];
  const collect = (list: StepInput[]) => {
    for (const step of list) {
      if ("node" in step) nodeIds.push(nodeIdOf(step.node));
      for (const child of childLists(step)) collect(child.steps);
    }
  };
  collect(steps);
  collect(onFailure);
  const resolution: Resolution = { nodes: await getNodes(db, accountId, nodeIds), problems: [], checked: [] };
  const top = { enclosing: [], perItem: false, handler: false };
  const resolved = resolveList(steps, ["steps"], top, resolution);
  const resolvedOnFailure = resolveList(onFailure, ["on_failure"], { ...top, handler: true }, resolution);
  // The request was counted before it was parsed; the node templates it copies count too,
  // before their templates are parsed again here and compiled with the revision.
  const copied = templateBudgetProblem(resolution.checked.flatMap((step) => step.fields.map(({ value }) => value)));
  if (copied) throw new DomainError("payload_too_large", `the flow, with the node templates it copies, ${copied}`);
  const problems = [...resolution.problems, ...crossStepProblems(resolution.checked)];
  if (problems.length > 0) throw new DomainError("validation_error", `invalid input: ${problems.join("; ")}`);
  return {
    steps: resolved,
    onFailure: resolvedOnFailure,
    fields: resolution.checked.flatMap((step) => step.fields),
  };
}

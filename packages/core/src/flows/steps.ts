import type { Database, StepInput, StoredStep } from "@platform/db";
import type { Kysely } from "kysely";
import { DomainError, invalidInput, type Problem } from "../errors.ts";
import { getNodes, type Node } from "../hub/nodes/nodes.ts";
import { respondPayloadProblems } from "../runs/tenant-answers.ts";
import { type FieldPath, inspectPayload, templateBudgetProblem } from "../templates/index.ts";
import { type Sight, type StepPlace, sightOf } from "./step-scope.ts";
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
  /** Where it stands among the lists of the flow, for what it may see (step-scope.ts). */
  place: StepPlace;
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

const LATER = "a step sees only the steps before it";

/** Why lists of one step do not see into each other, by their fields (`parallel.left`, `switch.0.steps`, `default`, `catch`). */
function apartWhy(readerField: string, targetField: string): string {
  if (readerField === "catch" || targetField === "catch") return "a catch runs only when its step has failed";
  if (readerField.startsWith("parallel.")) return "the branches of a parallel run at once";
  return "a switch runs one of its lists";
}

/** Why `reader` may not name `target` (seen as `sight`), or null when it may. */
function sightProblem(sight: Sight, target: string, reader: string): string | null {
  switch (sight.kind) {
    case "seen":
      return null;
    case "itself":
      return `refers to its own step; ${LATER}`;
    case "holder":
      return `refers to step "${target}", which holds it and has not ended yet`;
    case "later":
      return `refers to step "${target}", which runs later; ${LATER}`;
    case "inside":
      return `refers to step "${target}" inside "${sight.holder}", which step "${reader}" cannot see: the steps after "${sight.holder}" read it as a whole ({{steps.${sight.holder}}})`;
    case "apart":
      return `refers to step "${target}" in ${sight.targetField} of "${sight.holder}", which step "${reader}" in ${sight.readerField} cannot see: ${apartWhy(sight.readerField, sight.targetField)}`;
    case "failure":
      return `refers to step "${target}", which step "${reader}" of on_failure cannot see: a run may fail before any step ends ({{error.step}} names the step that failed)`;
  }
}

/**
 * Problems across steps: duplicate names, `{{steps.<name>}}` naming a step it cannot see (step-scope.ts),
 * `item`/`index` outside a for-each and `error` outside a handler, too many steps.
 */
export function crossStepProblems(steps: CheckedStep[]): Problem[] {
  const problems: Problem[] = [];
  if (steps.length > MAX_FLOW_STEPS) {
    problems.push({
      path: "steps",
      message: `a flow holds at most ${MAX_FLOW_STEPS} steps in all its lists (this one ${steps.length})`,
    });
  }
  const first = new Map<string, CheckedStep>();
  for (const step of steps) {
    const seen = first.get(step.name);
    if (seen === undefined) first.set(step.name, step);
    else
      problems.push({
        path: fieldText([...step.path, "name"]),
        message: `duplicate step name "${step.name}" (also ${fieldText([...seen.path, "name"])})`,
      });
  }
  const referenceProblem = (name: string, reader: CheckedStep) => {
    const target = first.get(name);
    if (target === undefined) return `refers to no step of this flow ("${name}")`;
    return sightProblem(sightOf(reader.place, target.place), name, reader.name);
  };
  for (const step of steps) {
    for (const { origin, value, node } of step.fields) {
      for (const { field, reference } of inspectPayload(value).references) {
        let why: string | null = null;
        if (reference.root === "steps") why = referenceProblem(reference.path[0] ?? "", step);
        else if ((reference.root === "item" || reference.root === "index") && !step.perItem) {
          why = "is only in scope inside a for_each";
        } else if (reference.root === "error" && !step.handler) why = "is only in scope inside catch and on_failure";
        if (!why) continue;
        const message = `{{${reference.expression}}} ${why}`;
        // In a node's payload, the problem is the node reference's, naming the field of the node.
        problems.push(
          node
            ? { path: fieldText(origin), message: `${node} payload.${fieldText(field)}: ${message}` }
            : { path: fieldText([...origin, ...field]), message },
        );
      }
    }
  }
  return problems;
}

interface Resolution {
  nodes: Map<string, Node>;
  problems: Problem[];
  checked: CheckedStep[];
}

/** Where a list stands: the places of the steps holding it, its field in the innermost, and what is in scope inside it. */
interface ListContext {
  holders: StepPlace;
  field: FieldPath;
  perItem: boolean;
  handler: boolean;
}

/** A list resolved: node references become the node's task as it is now; every step is recorded for the checks. */
function resolveList(list: StepInput[], at: FieldPath, context: ListContext, resolution: Resolution): StoredStep[] {
  const { holders, perItem, handler } = context;
  return list.map((step, index): StoredStep => {
    const path = [...at, index];
    const place = [...holders, { list: fieldText(at), field: fieldText(context.field), index, name: step.name }];
    const entry: CheckedStep = { name: step.name, path, place, perItem, handler, fields: [] };
    resolution.checked.push(entry);
    let resolved: StoredStep;
    if ("node" in step) {
      const node = resolution.nodes.get(nodeIdOf(step.node));
      const guards = step.if === undefined ? [] : [{ origin: [...path, "if"], value: step.if }];
      if (!node) {
        resolution.problems.push({
          path: fieldText([...path, "node"]),
          message: `no node template ${step.node} in this account`,
        });
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
            resolution.problems.push({
              path: fieldText([...path, "node"]),
              message: `${node.subject} payload.${fieldText(field)}: ${message}`,
            });
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
    const withLists: Record<string, unknown> = { ...resolved };
    for (const list of childLists(step)) {
      const steps = resolveList(
        list.steps,
        [...path, ...list.field],
        {
          holders: place,
          field: list.field,
          perItem: perItem || Boolean(list.perItem),
          handler: handler || Boolean(list.handler),
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
  const top = { holders: [], perItem: false, handler: false };
  const resolved = resolveList(steps, ["steps"], { ...top, field: ["steps"] }, resolution);
  const resolvedOnFailure = resolveList(
    onFailure,
    ["on_failure"],
    { ...top, field: ["on_failure"], handler: true },
    resolution,
  );
  // The request was counted before it was parsed; the node templates it copies count too,
  // before their templates are parsed again here and compiled with the revision.
  const copied = templateBudgetProblem(resolution.checked.flatMap((step) => step.fields.map(({ value }) => value)));
  if (copied) throw new DomainError("payload_too_large", `the flow, with the node templates it copies, ${copied}`);
  const problems = [...resolution.problems, ...crossStepProblems(resolution.checked)];
  if (problems.length > 0) throw invalidInput(problems);
  return {
    steps: resolved,
    onFailure: resolvedOnFailure,
    fields: resolution.checked.flatMap((step) => step.fields),
  };
}

/**
 * What a step may read of the other steps of its flow (`steps.<name>`): the steps that have
 * certainly ended before it starts. Every list of steps is a scope, as a block is in a
 * programming language:
 *
 * - a step sees the steps before it in its own list, and in each list around it the steps
 *   before the step that holds it;
 * - a control step's lists are closed to every step outside them: the steps after it read
 *   what its lists did through its own output, as a whole (`steps.route` is the last output
 *   of the case a switch ran, `steps.fan.left` a parallel branch's, `steps.lines` each
 *   for-each item's, `steps.lookup` the last output of its `catch` when it handled a failure);
 * - the lists of one step never see into each other: a parallel's branches run at once, a
 *   switch runs one of its cases or its default, a `catch` runs only when its step failed;
 * - `on_failure` sees none of the flow's steps (a run may fail at any of them): `error.step`
 *   names the one that failed.
 *
 * A save refuses a reference the rule does not allow (flows/steps.ts), and a run keeps to
 * the same rule for what no save can check (`$lookup($$.steps, name)`, `$$`): each list runs
 * on its own view of the outputs (engine/executor.ts).
 */

/** One list on the way from the top of a flow to a step, and the position in it of the step or of the step holding it. */
export interface Placement {
  /** The list's path: `steps`, `steps.2.parallel.left`, `on_failure`. */
  list: string;
  /** The list's field in the step holding it (`parallel.left`, `switch.0.steps`, `default`, `catch`), or the flow's (`steps`, `on_failure`). */
  field: string;
  index: number;
  /** The name of the step at `index`. */
  name: string;
}

/** Where a step stands: one placement per list from the flow's top down, its own list last. */
export type StepPlace = Placement[];

/** What a step at `reader` sees of the step at `target`. */
export type Sight =
  | { kind: "seen" }
  | { kind: "itself" }
  /** The target holds the reader: it has not ended when the reader runs. */
  | { kind: "holder" }
  | { kind: "later" }
  /** The target is inside `holder`, a step that ended before the reader: read `holder` as a whole. */
  | { kind: "inside"; holder: string }
  /** The two are in different lists of `holder` (`readerField`, `targetField`). */
  | { kind: "apart"; holder: string; readerField: string; targetField: string }
  /** The reader is an `on_failure` step, the target one of the flow's steps. */
  | { kind: "failure" };

/** The one rule (see above): what `reader` sees of `target`. */
export function sightOf(reader: StepPlace, target: StepPlace): Sight {
  let shared = 0;
  while (
    shared < reader.length &&
    shared < target.length &&
    reader[shared]?.list === target[shared]?.list &&
    reader[shared]?.index === target[shared]?.index
  ) {
    shared++;
  }
  if (shared === target.length) return shared === reader.length ? { kind: "itself" } : { kind: "holder" };
  // The reader holds the target (a switch's `when` naming a step of its cases): it runs later.
  if (shared === reader.length) return { kind: "later" };
  const from = reader[shared] as Placement;
  const to = target[shared] as Placement;
  if (from.list !== to.list) {
    if (shared > 0) {
      const holder = (reader[shared - 1] as Placement).name;
      return { kind: "apart", holder, readerField: from.field, targetField: to.field };
    }
    return from.list === "on_failure" ? { kind: "failure" } : { kind: "later" };
  }
  if (to.index > from.index) return { kind: "later" };
  return shared === target.length - 1 ? { kind: "seen" } : { kind: "inside", holder: to.name };
}

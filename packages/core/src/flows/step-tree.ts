import type { FlowStep, ForEachStep, ParallelStep, StopStep, SwitchStep } from "@platform/db";

/**
 * Walking a flow's steps. Their shape (`FlowStep` and its kinds) is stored in jsonb columns,
 * so it is defined with the other stored shapes, in @platform/db (stored-shapes.ts).
 */

/** A list of steps inside a step, with the field path that leads to it from the step. */
export interface ChildList<Task> {
  field: (string | number)[];
  steps: FlowStep<Task>[];
  /** Inside a for-each item: `item` and `index` are in scope. */
  perItem?: boolean;
  /** A handler: `error` is in scope. */
  handler?: boolean;
}

export const isSwitch = <T>(step: FlowStep<T>): step is SwitchStep<T> => "switch" in step;
export const isForEach = <T>(step: FlowStep<T>): step is ForEachStep<T> => "for_each" in step;
export const isParallel = <T>(step: FlowStep<T>): step is ParallelStep<T> => "parallel" in step;
export const isStop = <T>(step: FlowStep<T>): step is StopStep => "stop" in step;

/** The lists a step holds, in the order they appear in it (cases, default, items, branches, handler). */
export function childLists<T>(step: FlowStep<T>): ChildList<T>[] {
  const lists: ChildList<T>[] = [];
  if (isSwitch(step)) {
    for (const [index, branch] of step.switch.entries())
      lists.push({ field: ["switch", index, "steps"], steps: branch.steps });
    if (step.default) lists.push({ field: ["default"], steps: step.default });
  } else if (isForEach(step)) {
    lists.push({ field: ["steps"], steps: step.steps, perItem: true });
  } else if (isParallel(step)) {
    for (const [branch, steps] of Object.entries(step.parallel)) lists.push({ field: ["parallel", branch], steps });
  }
  if (!isStop(step) && step.catch) lists.push({ field: ["catch"], steps: step.catch, handler: true });
  return lists;
}

/**
 * The shape of a flow's steps: a list whose steps are tasks (a function with a payload) or
 * control steps holding lists of their own (`switch`, `for_each`, `parallel`), any of them
 * guarded by `if` and handled by `catch`, and `stop`. One definition serves the steps as
 * saved (tasks may be node references) and as a revision stores them (tasks resolved).
 */

/** What any step but `stop` may carry. */
export interface StepGuards<Task> {
  /** A template: a false value (false, null, missing, 0, "" or []) skips the step. */
  if?: string;
  /** Run when the step fails after its retries; their last output becomes the step's. */
  catch?: FlowStep<Task>[];
}

export interface SwitchCase<Task> {
  when: string;
  steps: FlowStep<Task>[];
}

export type SwitchStep<Task> = StepGuards<Task> & {
  name: string;
  switch: SwitchCase<Task>[];
  default?: FlowStep<Task>[];
};

export type ForEachStep<Task> = StepGuards<Task> & {
  name: string;
  /** A template whose value is the array to iterate. */
  for_each: string;
  steps: FlowStep<Task>[];
  /** Items run at once, 1-50. */
  concurrency: number;
};

export type ParallelStep<Task> = StepGuards<Task> & {
  name: string;
  parallel: Record<string, FlowStep<Task>[]>;
};

export interface StopStep {
  name: string;
  if?: string;
  stop: { output?: unknown; response?: { status: number; headers: Record<string, string>; body?: unknown } };
}

export type ControlStep<Task> = SwitchStep<Task> | ForEachStep<Task> | ParallelStep<Task> | StopStep;

export type FlowStep<Task> = (Task & StepGuards<Task>) | ControlStep<Task>;

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

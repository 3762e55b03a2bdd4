import type { Principal } from "../caller.ts";
import { type DomainError, isDomainError, type Problem, problemsOfZodError } from "../errors.ts";
import { templateBudgetProblem } from "../templates/index.ts";
import { type FlowsDeps, scheduleProblem, stepsToSave } from "./flows.ts";
import { createFlowInput, updateFlowInput } from "./schemas.ts";
import { toolNameProblem } from "./tool-names.ts";

/** The refusals of a save that are the draft's problems (anything else is the server's). */
const PROBLEM_CODES = new Set(["validation_error", "forbidden", "payload_too_large", "conflict"]);

/** A refusal's problems as it names them; one that names none is a problem of the whole draft. */
const problemsOf = (error: DomainError): Problem[] =>
  error.problems ? [...error.problems] : [{ path: "", message: error.message }];

/**
 * What saving `draft` would refuse, without saving it: the body's own rules and those that
 * need the account (node references, step names in templates, the right to read named
 * secrets, what its plan allows of schedules, a tool name another flow has). A draft with an `id` is checked as an update (its signing secret may be left out).
 */
export async function checkFlow(
  deps: FlowsDeps,
  principal: Principal,
  draft: Record<string, unknown>,
): Promise<Problem[]> {
  const tooMany = templateBudgetProblem(draft);
  if (tooMany) return [{ path: "", message: `the flow ${tooMany}` }];
  const schema = "id" in draft ? updateFlowInput : createFlowInput;
  const parsed = schema.safeParse(draft);
  if (!parsed.success) return problemsOfZodError(parsed.error);
  try {
    await stepsToSave(deps, principal, parsed.data);
    const id = "id" in parsed.data ? (parsed.data.id as string) : null;
    const schedule = await scheduleProblem(deps, principal.accountId, id, parsed.data);
    const toolName = await toolNameProblem(deps.db, principal.accountId, id, parsed.data);
    return [...(schedule ? problemsOf(schedule) : []), ...(toolName ? [toolName] : [])];
  } catch (error) {
    if (isDomainError(error) && PROBLEM_CODES.has(error.code)) {
      return problemsOf(error);
    }
    throw error;
  }
}

import type { Principal } from "../caller.ts";
import { isDomainError } from "../errors.ts";
import { templateBudgetProblem } from "../templates/index.ts";
import { type FlowsDeps, scheduleProblem, stepsToSave } from "./flows.ts";
import { createFlowInput, updateFlowInput } from "./schemas.ts";

/** One thing wrong with a flow draft: where (`steps.2.payload`, empty for the whole) and what. */
export interface FlowProblem {
  path: string;
  message: string;
}

const INVALID_INPUT = "invalid input: ";
/** The refusals of a save that are the draft's problems (anything else is the server's). */
const PROBLEM_CODES = new Set(["validation_error", "forbidden", "payload_too_large", "conflict"]);

/** `invalid input: a.b: message; c: message` as problems; any other text as one problem of the whole. */
function problemsIn(message: string): FlowProblem[] {
  if (!message.startsWith(INVALID_INPUT)) return [{ path: "", message }];
  return message
    .slice(INVALID_INPUT.length)
    .split("; ")
    .map((part) => {
      const colon = part.indexOf(": ");
      return colon > 0 ? { path: part.slice(0, colon), message: part.slice(colon + 2) } : { path: "", message: part };
    });
}

/**
 * What saving `draft` would refuse, without saving it: the body's own rules and those that
 * need the account (node references, step names in templates, the right to read named
 * secrets, what its plan allows of schedules). A draft with an `id` is checked as an update (its signing secret may be left out).
 */
export async function checkFlow(deps: FlowsDeps, principal: Principal, draft: Record<string, unknown>) {
  const tooMany = templateBudgetProblem(draft);
  if (tooMany) return [{ path: "", message: `the flow ${tooMany}` }];
  const schema = "id" in draft ? updateFlowInput : createFlowInput;
  const parsed = schema.safeParse(draft);
  if (!parsed.success) {
    return parsed.error.issues.map((issue) => ({ path: issue.path.join("."), message: issue.message }));
  }
  try {
    await stepsToSave(deps, principal, parsed.data);
    const id = "id" in parsed.data ? (parsed.data.id as string) : null;
    const schedule = await scheduleProblem(deps, principal.accountId, id, parsed.data);
    return schedule ? problemsIn(schedule.message) : [];
  } catch (error) {
    if (isDomainError(error) && PROBLEM_CODES.has(error.code)) {
      return problemsIn(error.message);
    }
    throw error;
  }
}

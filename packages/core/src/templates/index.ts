/** Templates in payloads: one module for node templates (checked at save) and flows (compiled per revision, resolved at run). */
export { DEFINITION_TEMPLATE_LIMITS, templateBudgetProblem } from "./budget.ts";
export {
  EXPRESSION_LIMITS,
  ExpressionEvaluationError,
} from "./expressions.ts";
export {
  parseTemplate,
  TEMPLATE_ROOTS,
  type TemplateExpression,
  type TemplatePart,
  type TemplateReference,
  type TemplateRoot,
  TemplateSyntaxError,
} from "./parse.ts";
export {
  type CompiledPayload,
  compilePayload,
  type FieldPath,
  type FieldReference,
  inspectPayload,
  type ResolveOptions,
  type TemplateProblem,
  type TemplateScope,
  UrlTemplateError,
} from "./payload.ts";
export { encodeUrlValue } from "./url-encoding.ts";

/** Template references in payloads: one module for node templates (checked at save) and flows (resolved at run). */
export {
  parseTemplate,
  TEMPLATE_ROOTS,
  type TemplatePart,
  type TemplateReference,
  type TemplateRoot,
  TemplateSyntaxError,
} from "./parse.ts";
export {
  type FieldPath,
  type FieldReference,
  inspectPayload,
  resolvePayload,
  type TemplateProblem,
  type TemplateScope,
} from "./payload.ts";

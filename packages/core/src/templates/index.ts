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
  type ResolveOptions,
  resolvePayload,
  type TemplateProblem,
  type TemplateScope,
  UrlTemplateError,
} from "./payload.ts";
export { encodeUrlValue } from "./url-encoding.ts";

/**
 * The functions the flow engine runs, by subject: the only values a node's `subject`
 * may take. The engine implements one handler per entry (`Record<BuiltInSubject, ...>`).
 */
export const BUILT_IN_SUBJECTS = [
  "http.request",
  "kv.get",
  "kv.put",
  "stream.publish",
  "transform",
  "respond",
  "delay",
  "js",
  "wait.event",
  "event.send",
  "flow.call",
] as const;

export type BuiltInSubject = (typeof BUILT_IN_SUBJECTS)[number];

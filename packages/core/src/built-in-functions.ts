import type { BuiltInSubject } from "@platform/db";

/** `L` when it names every member of `T`, else never: a closed list checked against the union it lists. */
type EveryMember<T, L extends readonly T[]> = [Exclude<T, L[number]>] extends [never] ? L : never;

/**
 * The functions the flow engine runs, by subject: the only values a node's `subject`
 * may take. The engine implements one handler per entry (`Record<BuiltInSubject, ...>`).
 * Stored steps name them, so their union is a stored shape (`BuiltInSubject`, @platform/db);
 * this list names each member once (one missing or unknown does not compile).
 */
const SUBJECTS = [
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
  "mcp.call",
] as const satisfies readonly BuiltInSubject[];

export const BUILT_IN_SUBJECTS: EveryMember<BuiltInSubject, typeof SUBJECTS> = SUBJECTS;

/**
 * `true` when `A` and `B` are the same type (each assignable to the other), else `false`. A
 * constant typed `Same<a schema's output, a stored shape> = true` compiles only while the zod
 * schema and the stored shape it answers (@platform/db) say the same thing.
 */
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

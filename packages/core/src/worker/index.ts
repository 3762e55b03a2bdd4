export * from "./catalog.ts";
export { type DeadLetter, deadLetterCounter, deadLetterStream, readDeadLetters } from "./dead-letter.ts";
export type { ConsumerStats } from "./member.ts";
export type { PeriodicJob, PeriodicJobContext } from "./periodic.ts";
export { startWorkerRuntime, type WorkerRuntime, type WorkerRuntimeOptions } from "./runtime.ts";

import type { StepOptions } from "@platform/db";

/**
 * The retry options a flow step runs with when it leaves them out (`options` of an inline
 * step). The flows API writes them into every stored revision, so a revision always holds
 * all three; the engine reads them from there, and falls back to these for a stored step
 * that lacks one.
 */
export const STEP_OPTION_DEFAULTS: Readonly<StepOptions> = { timeout: 30_000, attempts: 1, backoff_ms: 1_000 };

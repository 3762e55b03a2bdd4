import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "./app-router.ts";

/** What each procedure takes, by its path: `RouterInputs["flows"]["create"]`. */
export type RouterInputs = inferRouterInputs<AppRouter>;
/** What each procedure answers, by its path: `RouterOutputs["runs"]["get"]["status"]`. */
export type RouterOutputs = inferRouterOutputs<AppRouter>;

import { accountsRouter } from "./accounts/router.ts";
import { flowsRouter } from "./flows/router.ts";
import { gatewayRouter } from "./gateways/router.ts";
import { hubRouter } from "./hub/router.ts";
import { monitoringRouter } from "./monitoring/router.ts";
import { runsRouter } from "./runs/router.ts";
import { secretsRouter } from "./secrets/router.ts";
import { storageRouter } from "./storage/router.ts";
import { router } from "./trpc.ts";

/** One router per area; REST paths come from each procedure's `meta.openapi`. */
export const appRouter = router({
  accounts: accountsRouter,
  hub: hubRouter,
  monitoring: monitoringRouter,
  storage: storageRouter,
  flows: flowsRouter,
  gateway: gatewayRouter,
  secrets: secretsRouter,
  runs: runsRouter,
});

export type AppRouter = typeof appRouter;

import { notImplemented } from "../not-implemented.ts";
import { publicProcedure, router } from "../trpc.ts";
import { currentMetricsInput, currentMetricsOutput } from "./schemas.ts";

export const monitoringRouter = router({
  current: publicProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/monitoring/metrics/current",
        tags: ["monitoring"],
        summary: "Current values of monitoring metrics",
        protect: false,
        description: "Failures answer `{message, data: null}`.",
      },
    })
    .input(currentMetricsInput)
    .output(currentMetricsOutput)
    .mutation(() => notImplemented()),
});

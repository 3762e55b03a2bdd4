import { z } from "zod";
import { DomainError } from "../errors.ts";
import { operations, router } from "../trpc.ts";
import { accountOfMetricsRequest } from "./accounts.ts";
import { METRIC_CATALOG } from "./catalog.ts";
import { readCurrentMetrics } from "./current.ts";
import { currentMetricsInput, currentMetricsOutput, metricCatalogOutput } from "./schemas.ts";

const op = operations(["monitoring"]);
const whose = `Without a credential (as the spec states the request) \`account\` names the account by id; with a Bearer token or API key the caller's own account is read and \`account\` is ignored. An operator can demand a credential with METRICS_REQUIRE_AUTH=true.`;

export const monitoringRouter = router({
  current: op
    .optionallyAuthed({
      method: "POST",
      path: "/monitoring/metrics/current",
      summary: "Current values of monitoring metrics",
      description: `One entry per requested name, in order: \`{ts, value}\` (\`ts\` in Unix milliseconds), or \`{error}\` for a metric without data (an unknown name, a stream metric without \`stream\`, a percentile while no run accepted in the last hour has ended). Counters are totals since the account was created; a process's own increments show at once, other processes' within a fraction of a second. ${whose} Failures answer \`{message, data: null}\`: 400 \`metrics are required\` when the list is missing or empty.`,
      errorResponses: {
        400: "metrics are required, or other invalid input",
        401: "Credential invalid, or missing while METRICS_REQUIRE_AUTH=true",
        404: "No account with that id",
        500: "oops",
      },
    })
    .input(currentMetricsInput)
    .output(currentMetricsOutput)
    .mutation(async ({ ctx, input }) => {
      if (!input.metrics?.length) throw new DomainError("validation_error", "metrics are required");
      const accountId = await accountOfMetricsRequest(ctx.services, ctx.principal, input.account);
      return {
        message: "success",
        data: await readCurrentMetrics(ctx.services, accountId, input.metrics, input.stream),
      };
    }),

  list: op
    .optionallyAuthed({
      method: "GET",
      path: "/monitoring/metrics",
      summary: "The metric names the platform knows",
      description: `Every name \`POST /monitoring/metrics/current\` answers, with what it counts and whether it needs \`stream\`. Open to anonymous callers unless METRICS_REQUIRE_AUTH=true.`,
      errorResponses: { 401: "Credential invalid, or missing while METRICS_REQUIRE_AUTH=true" },
    })
    .input(z.void())
    .output(metricCatalogOutput)
    .query(({ ctx }) => {
      if (!ctx.principal && ctx.services.config.metricsRequireAuth) {
        throw new DomainError("unauthorized", "missing credential");
      }
      return {
        message: "success",
        data: METRIC_CATALOG.map((metric) => ({
          name: metric.name,
          description: metric.description,
          needs_stream: "needsStream" in metric && metric.needsStream,
        })),
      };
    }),
});

import { z } from "zod";

/** Metric names are short dotted words; anything else is reported as `no data`, not refused. */
const metricName = z.string().min(1).max(100);

export const currentMetricsInput = z.object({
  metrics: z
    .array(metricName)
    .max(50, { error: "ask for at most 50 metrics at once" })
    .optional()
    .meta({ description: "Metric names (see `GET /monitoring/metrics`); required, at least one." }),
  account: z
    .uuid({ error: "must be an account id (a UUID)" })
    .optional()
    .meta({ description: "Account id; required without a credential, ignored with one." }),
  stream: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .meta({ description: "Stream name, for `stream.messages` and `stream.bytes`." }),
});

export const metricValue = z
  .object({
    ts: z.number().int().meta({ description: "When the value was read: Unix time in milliseconds." }),
    value: z.number(),
  })
  .meta({ id: "MetricValue" });

export const metricError = z
  .object({ error: z.string().meta({ example: "no data" }) })
  .meta({ id: "MetricError", description: "A metric without data: unknown name, missing `stream`, nothing yet." });

export const currentMetricsOutput = z.object({
  message: z.string().meta({ example: "success" }),
  data: z.array(z.union([metricValue, metricError])),
});

export const metricCatalogOutput = z.object({
  message: z.string().meta({ example: "success" }),
  data: z.array(
    z
      .object({
        name: z.string(),
        description: z.string(),
        needs_stream: z.boolean().meta({ description: "Whether the request must name a `stream`." }),
      })
      .meta({ id: "MetricDefinition" }),
  ),
});

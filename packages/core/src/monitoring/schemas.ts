import { z } from "zod";

export const currentMetricsInput = z.object({
  metrics: z.array(z.string().min(1)).min(1),
  account: z.string().optional().meta({ description: "Account id; ignored when a credential is sent." }),
  stream: z.string().optional().meta({ description: "Stream name, for stream.* metrics." }),
});

export const metricValue = z.object({
  ts: z.number().int().meta({ description: "Unix time in milliseconds." }),
  value: z.number(),
});

export const currentMetricsOutput = z.object({
  message: z.string(),
  data: z.array(z.union([metricValue, z.object({ error: z.string() })])),
});

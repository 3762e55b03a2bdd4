import { z } from "zod";
import { pathParam } from "../schemas.ts";

export const HTTP_METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"] as const;

export const gateway = z
  .object({
    name: z.string(),
    description: z.string(),
    url: z.string().meta({ description: "Public address of the gateway." }),
    subject: z.string().meta({ description: "The gateway topic." }),
    active: z.boolean(),
    timeout: z.number().int().meta({ description: "Milliseconds." }),
    limit: z.object({
      request: z.number().int().meta({ description: "Requests allowed per window." }),
      time: z.number().int().meta({ description: "Window length in seconds." }),
    }),
    modified: z.number().int().meta({ description: "Unix time in seconds." }),
    type: z.string(),
  })
  .meta({ id: "Gateway" });

export const topicInput = z.object({ gateway_topic: pathParam("Topic of the gateway.") });

export const gatewayOutput = z.object({ body: gateway, metadata: z.object({ subject: z.string() }) });

export const deleteMappingInput = topicInput.extend({
  method: z.enum(HTTP_METHODS).meta({ description: "HTTP method of the mapping." }),
  path: z.string().startsWith("/").meta({ description: "URL path of the mapping, with the leading slash." }),
});

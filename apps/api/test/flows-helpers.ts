import { expect } from "bun:test";
import { readBody } from "./accounts-helpers.ts";
import type { TestApi } from "./harness.ts";

/** A Stripe endpoint secret in Stripe's format. */
export const STRIPE_SECRET = "whsec_4eC39HqLyjWDarjtT1zdp7dc";

/** The stripe example of `../shared/design/api.md`, with an inline step only (node references need a node first). */
export function stripeFlow(overrides: Record<string, unknown> = {}) {
  return {
    name: "stripe payments",
    description: "Saves each succeeded payment",
    active: true,
    trigger: {
      type: "webhook",
      events: ["payment_intent.succeeded"],
      response_mode: "acknowledge",
      access: "signature",
      service: "stripe",
      signing_secret: STRIPE_SECRET,
      hmac: null,
    },
    steps: [
      {
        name: "save",
        node_type: "function",
        subject: "kv.put",
        payload: { bucket: "payments", key: "{{trigger.data.object.id}}", value: "{{trigger.data.object}}" },
        options: { timeout: 5000, attempts: 3, backoff_ms: 200 },
      },
    ],
    ...overrides,
  };
}

/** The smallest flow: one inline transform step, everything else left to its default. */
export const minimalFlow = (name = "minimal") => ({
  name,
  steps: [{ name: "echo", subject: "transform", payload: { id: "{{trigger.id}}" } }],
});

export interface FlowsClient {
  create(body: unknown, headers?: Record<string, string>): Promise<Response>;
  list(headers?: Record<string, string>): Promise<Response>;
  get(id: string, headers?: Record<string, string>): Promise<Response>;
  update(id: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  remove(id: string, headers?: Record<string, string>): Promise<Response>;
  regenerate(id: string, headers?: Record<string, string>): Promise<Response>;
  /** Creates a flow and answers its `data`, expecting 200. */
  created(body: unknown, headers?: Record<string, string>): Promise<FlowBody>;
}

// biome-ignore lint/suspicious/noExplicitAny: the assertions that read a flow are its type check
export type FlowBody = any;

export function flowsClient(api: TestApi, owner: Record<string, string>): FlowsClient {
  const client: FlowsClient = {
    create: (body, headers = owner) => api.request("/flows", { method: "POST", headers, json: body }),
    list: (headers = owner) => api.request("/flows", { headers }),
    get: (id, headers = owner) => api.request(`/flows/${id}`, { headers }),
    update: (id, body, headers = owner) => api.request(`/flows/${id}`, { method: "PUT", headers, json: body }),
    remove: (id, headers = owner) => api.request(`/flows/${id}`, { method: "DELETE", headers }),
    regenerate: (id, headers = owner) => api.request(`/flows/${id}/webhook/regenerate`, { method: "POST", headers }),
    async created(body, headers = owner) {
      const response = await client.create(body, headers);
      const answer = await readBody(response);
      expect({ status: response.status, answer }).toEqual({ status: 200, answer: { data: expect.any(Object) } });
      return answer.data;
    },
  };
  return client;
}

/** Creates a node template through the API and answers its subject `nodes.<id>`. */
export async function createNode(
  api: TestApi,
  headers: Record<string, string>,
  data: Record<string, unknown>,
): Promise<string> {
  const response = await api.request("/hub/nodes", {
    method: "POST",
    headers,
    json: { collection: "flows.test", data: { name: "node", node_type: "function", ...data } },
  });
  expect(response.status).toBe(200);
  return (await readBody(response)).subject;
}

import { expect } from "bun:test";
import { readBody } from "./accounts-helpers.ts";
import type { TestApi } from "./harness.ts";

/** Creates a gateway (expecting 200) and answers its subject. */
export async function createGateway(
  api: TestApi,
  headers: Record<string, string>,
  body: Record<string, unknown>,
): Promise<string> {
  const response = await api.request("/gateway", { method: "POST", headers, json: { name: "gateway", ...body } });
  const answer = await readBody(response);
  expect({ status: response.status, answer }).toEqual({ status: 200, answer: expect.any(Object) });
  return answer.body.subject;
}

/** Maps a method and path of a gateway to a flow, expecting 200. */
export async function mapRoute(
  api: TestApi,
  headers: Record<string, string>,
  topic: string,
  method: string,
  path: string,
  flowId: string,
): Promise<void> {
  const response = await api.request(`/gateway/${topic}/mapping`, {
    method: "POST",
    headers,
    json: { method, path, flow_id: flowId },
  });
  expect({ status: response.status, body: await readBody(response) }).toEqual({
    status: 200,
    body: { data: { method, path, flow_id: flowId } },
  });
}

import { describe, expect, test } from "bun:test";
import { parseWebhookBody } from "./body.ts";
import { buildWebhookTriggerData } from "./trigger-data.ts";

const receivedAt = new Date("2026-03-01T12:00:00.250Z");

describe("webhook trigger data", () => {
  test("body fields at the top level, lower-case headers, webhook_id and received_at", async () => {
    const { fields } = await parseWebhookBody(
      new TextEncoder().encode('{"event":"build.finished","data":{"id":42}}'),
      "application/json",
      { maxFileContentBytes: 0 },
    );
    const headers = new Headers([
      ["Content-Type", "application/json"],
      ["X-Custom-Thing", "a"],
      ["x-custom-thing", "b"],
    ]);
    expect(buildWebhookTriggerData({ body: fields, headers, webhookId: "wh_3f9a", receivedAt })).toEqual({
      event: "build.finished",
      data: { id: 42 },
      headers: { "content-type": "application/json", "x-custom-thing": "a, b" },
      webhook_id: "wh_3f9a",
      received_at: "2026-03-01T12:00:00.250Z",
    });
  });

  test("a sender cannot overwrite the platform's fields", () => {
    const body = { webhook_id: "forged", received_at: "1970-01-01T00:00:00Z", headers: { forged: "yes" }, kept: 1 };
    const data = buildWebhookTriggerData({ body, headers: new Headers({ "X-A": "1" }), webhookId: "wh_1", receivedAt });
    expect(data).toEqual({
      kept: 1,
      headers: { "x-a": "1" },
      webhook_id: "wh_1",
      received_at: "2026-03-01T12:00:00.250Z",
    });
  });

  test("the platform's API key is left out of the headers a flow keeps", () => {
    const headers = new Headers({ "X-Api-Key": "wfk_secret", "User-Agent": "curl/8" });
    const data = buildWebhookTriggerData({
      body: {},
      headers,
      webhookId: "wh_1",
      receivedAt,
      omitHeaders: ["X-Api-Key"],
    });
    expect(data.headers).toEqual({ "user-agent": "curl/8" });
  });
});

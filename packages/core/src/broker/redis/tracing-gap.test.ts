import { expect, test } from "bun:test";
import diagnostics from "node:diagnostics_channel";
import { fillTracingChannelGap } from "./tracing-gap.ts";

test("ioredis's command channel reports subscribers only while something subscribes, as on Node", () => {
  fillTracingChannelGap();
  const channel = diagnostics.tracingChannel("ioredis:command") as unknown as {
    hasSubscribers: boolean;
    subscribe(handlers: Record<string, () => void>): void;
    unsubscribe(handlers: Record<string, () => void>): void;
  };
  expect(channel.hasSubscribers).toBe(false);
  const handlers = { start: () => {}, end: () => {}, asyncStart: () => {}, asyncEnd: () => {}, error: () => {} };
  channel.subscribe(handlers);
  expect(channel.hasSubscribers).toBe(true);
  channel.unsubscribe(handlers);
  expect(channel.hasSubscribers).toBe(false);
});

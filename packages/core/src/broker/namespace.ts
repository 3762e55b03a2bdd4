import type { Broker } from "./port.ts";

/** Everything on the port that is not scoped by its first argument. */
const UNSCOPED = new Set<PropertyKey>(["kind", "ping", "close"]);

/**
 * The same broker with every scope prefixed by `namespace`, so several deployments (or
 * test runs) can share one Redis without seeing each other's streams, keys, counters,
 * limits or channels. Scopes stay whole hash tags, so sharding by account is unchanged.
 */
export function namespaced(broker: Broker, namespace: string): Broker {
  if (!namespace) return broker;
  return new Proxy(broker, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      if (UNSCOPED.has(property)) return value.bind(target);
      return (scope: string, ...rest: unknown[]) => value.call(target, `${namespace}/${scope}`, ...rest);
    },
  });
}

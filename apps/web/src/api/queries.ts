import type { RouterInputs } from "@platform/client";
import { queryOptions } from "@tanstack/react-query";
import { api } from "./client.ts";

/**
 * Every query of the console, one factory per resource: a query's key and the call that
 * answers it are written once, here, for the page that shows it, the route loader that
 * fetches it before the page opens, and the change that makes it stale. Each key starts
 * with its resource (`all`), so invalidating `all` refreshes every query of the resource.
 */

export const flowQueries = {
  all: ["flows"] as const,
  list: () => queryOptions({ queryKey: [...flowQueries.all, "list"], queryFn: () => api.flows.list.query() }),
  one: (id: string) =>
    queryOptions({ queryKey: [...flowQueries.all, "one", id], queryFn: () => api.flows.get.query({ id }) }),
  /** What the API finds wrong with a draft (`POST /flows/validate`: it changes nothing). */
  check: (draft: RouterInputs["flows"]["validate"]) =>
    queryOptions({ queryKey: [...flowQueries.all, "check", draft], queryFn: () => api.flows.validate.mutate(draft) }),
};

export const runQueries = {
  all: ["runs"] as const,
  one: (id: string) =>
    queryOptions({ queryKey: [...runQueries.all, "one", id], queryFn: () => api.runs.get.query({ id }) }),
  /** The root of a run list's keys: a flow's runs (or, without one, the account's) under a filter. */
  list: (flowId: string | undefined, filter: object) =>
    [...runQueries.all, "list", flowId ?? "account", filter] as const,
  activity: (window: RouterInputs["runs"]["activity"]["window"], flowId: string) =>
    queryOptions({
      queryKey: [...runQueries.all, "activity", window, flowId],
      queryFn: () => api.runs.activity.query({ window, ...(flowId ? { flow_id: flowId } : {}) }),
    }),
};

export const secretQueries = {
  all: ["secrets"] as const,
  list: () => queryOptions({ queryKey: [...secretQueries.all, "list"], queryFn: () => api.secrets.list.query() }),
};

export const nodeQueries = {
  all: ["nodes"] as const,
  list: () => queryOptions({ queryKey: [...nodeQueries.all, "list"], queryFn: () => api.hub.nodes.list.query({}) }),
};

export const apiKeyQueries = {
  all: ["api-keys"] as const,
  list: () =>
    queryOptions({ queryKey: [...apiKeyQueries.all, "list"], queryFn: () => api.accounts.apiKeys.list.query() }),
};

export const memberQueries = {
  all: ["members"] as const,
  list: () =>
    queryOptions({ queryKey: [...memberQueries.all, "list"], queryFn: () => api.accounts.users.list.query() }),
};

export const gatewayQueries = {
  all: ["gateways"] as const,
  list: () => queryOptions({ queryKey: [...gatewayQueries.all, "list"], queryFn: () => api.gateway.list.query() }),
  mappings: (topic: string) =>
    queryOptions({
      queryKey: [...gatewayQueries.all, "mappings", topic],
      queryFn: () => api.gateway.mappings.list.query({ gateway_topic: topic }),
    }),
};

export const registryQueries = {
  all: ["registry"] as const,
  search: (search: string) =>
    queryOptions({
      queryKey: [...registryQueries.all, "search", search],
      queryFn: () => api.hub.registry.list.query({ ...(search ? { search } : {}), limit: 30 }),
    }),
  /** A server's tools, asked of the server itself (`POST /hub/mcp/registry/tools`: it changes nothing). */
  tools: (name: string, headers: Record<string, string>) =>
    queryOptions({
      queryKey: [...registryQueries.all, "tools", name, headers],
      queryFn: () => api.hub.registry.tools.mutate({ name, headers }),
      staleTime: 30_000,
    }),
};

export const storageQueries = {
  stream: (name: string) =>
    queryOptions({
      queryKey: ["streams", name, "messages"],
      queryFn: () => api.storage.streams.list.query({ name, limit: 50 }),
    }),
  bucket: (bucket: string) =>
    queryOptions({ queryKey: ["buckets", bucket, "keys"], queryFn: () => api.storage.kv.keys.list.query({ bucket }) }),
  value: (bucket: string, key: string) =>
    queryOptions({
      queryKey: ["buckets", bucket, "keys", key],
      queryFn: () => api.storage.kv.keys.get.query({ bucket, key }),
    }),
};

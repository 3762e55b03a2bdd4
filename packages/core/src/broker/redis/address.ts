/** Where the broker's Redis is: one server, or the seed nodes of a Redis Cluster. */
export type RedisAddress =
  | { kind: "single"; url: string }
  | {
      kind: "cluster";
      /** Nodes to learn the cluster's layout from; the client finds the rest itself. */
      nodes: { host: string; port: number }[];
      username?: string;
      password?: string;
      tls: boolean;
    };

const SINGLE = /^rediss?:\/\//;
const CLUSTER = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?$/;
const NODE = /^(\[[0-9a-fA-F:.]+\]|[\w.-]+)(?::(\d{1,5}))?$/;

/**
 * Reads REDIS_URL: `redis://` or `rediss://` for one server, `redis+cluster://host1:6379,host2:6379`
 * (`rediss+cluster://` with TLS, `user:password@` before the first host as in a `redis://` URL)
 * for a Redis Cluster. Throws an Error whose message says what is wrong.
 */
export function parseRedisAddress(url: string): RedisAddress {
  const cluster = CLUSTER.exec(url);
  if (cluster) {
    const [, scheme, credentials, hosts] = cluster as unknown as [string, string, string | undefined, string];
    const nodes = hosts.split(",").map((node) => {
      const match = NODE.exec(node);
      const port = Number(match?.[2] ?? 6379);
      if (!match || port < 1 || port > 65535) throw new Error(`"${node}" is not host:port`);
      return { host: (match[1] as string).replace(/^\[|\]$/g, ""), port };
    });
    const [username, password] = splitCredentials(credentials);
    return { kind: "cluster", nodes, username, password, tls: scheme === "rediss" };
  }
  if (!SINGLE.test(url)) throw new Error("is not a redis://, rediss:// or redis+cluster:// URL");
  try {
    new URL(url);
  } catch {
    throw new Error("is not a valid URL");
  }
  return { kind: "single", url };
}

function splitCredentials(credentials: string | undefined): [string | undefined, string | undefined] {
  if (!credentials) return [undefined, undefined];
  const colon = credentials.indexOf(":");
  if (colon < 0) return [decodeURIComponent(credentials), undefined];
  const username = decodeURIComponent(credentials.slice(0, colon));
  return [username || undefined, decodeURIComponent(credentials.slice(colon + 1))];
}

/**
 * The SSRF guard: resolves a URL's host once, refuses it unless an address it resolves to is
 * public (or explicitly allowed), and says where to connect — to that checked address, so a
 * second DNS answer (rebinding) can never be used — with the Host header and TLS server name
 * of the original host.
 */
import { lookup } from "node:dns/promises";
import { StepFailure } from "../step-failure.ts";
import { embeddedIpv4, formatIp, type Ip, inNetwork, type Network, parseIp, specialRange } from "./addresses.ts";

/** A host name's addresses (IPv4 and IPv6, as text). */
export type Resolver = (hostname: string) => Promise<string[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

export interface GuardOptions {
  allowPrivateNetwork: boolean;
  allowedNetworks: Network[];
  resolve: Resolver;
}

export interface Target {
  /** The URL to connect to: the checked address in place of the host name. */
  connectUrl: URL;
  /** The original `host[:port]`, sent as the Host header. */
  host: string;
  /** The original host name for SNI and certificate checks, when it is a name and the URL is https. */
  serverName?: string;
}

const REFUSAL_HINT = "flows may not reach private, loopback, link-local or metadata addresses (ALLOW_PRIVATE_NETWORK)";

function refusal(ip: Ip, options: GuardOptions): string | undefined {
  const allowed = (candidate: Ip) => options.allowedNetworks.some((network) => inNetwork(candidate, network));
  const inner = embeddedIpv4(ip);
  if (allowed(ip) || (inner && allowed(inner))) return undefined;
  return specialRange(ip);
}

/** Resolves and checks `url`; refusals are step failures whose text begins with `subject` (the step that asked). */
export async function resolveTarget(url: URL, options: GuardOptions, subject = "http.request"): Promise<Target> {
  if (options.allowPrivateNetwork) return { connectUrl: url, host: url.host };
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const literal = parseIp(hostname);
  let addresses: string[];
  if (literal) {
    addresses = [hostname];
  } else {
    try {
      addresses = await options.resolve(hostname);
    } catch (error) {
      const code = (error as { code?: string }).code;
      throw new StepFailure(`${subject}: could not resolve ${hostname}${code ? ` (${code})` : ""}`);
    }
    if (addresses.length === 0) throw new StepFailure(`${subject}: could not resolve ${hostname}`);
  }
  const refused: string[] = [];
  for (const address of addresses) {
    const ip = parseIp(address);
    if (!ip) {
      refused.push(`${address} (not an IP address)`);
      continue;
    }
    const reason = refusal(ip, options);
    if (reason) {
      refused.push(`${address} (${reason})`);
      continue;
    }
    const connectUrl = new URL(url);
    const inner = embeddedIpv4(ip);
    const connectTo = ip.version === 4 ? formatIp(ip) : inner && !specialRange(inner) ? formatIp(inner) : address;
    connectUrl.hostname = connectTo.includes(":") ? `[${connectTo}]` : connectTo;
    return {
      connectUrl,
      host: url.host,
      serverName: !literal && url.protocol === "https:" ? hostname : undefined,
    };
  }
  const what = literal ? refused.join(", ") : `${hostname}, which resolves to ${refused.join(", ")}`;
  throw new StepFailure(`${subject}: refused ${what}: ${REFUSAL_HINT}`, false);
}

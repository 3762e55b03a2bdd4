/**
 * IP address classification for the SSRF guard: which special-purpose range (RFC 6890 and
 * friends) an address falls in. Pure arithmetic on parsed addresses, so `0x7f.1`, `::ffff:7f00:1`
 * and `127.000.000.001` cannot slip past a string comparison (URL parsing normalises the first;
 * the parser here refuses what is not canonical dotted-quad or RFC 4291 text).
 */
import { isIP } from "node:net";

export interface Ip {
  version: 4 | 6;
  bits: bigint;
}

export interface Network extends Ip {
  prefix: number;
}

function parseIpv4(text: string): bigint | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let bits = 0n;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    bits = (bits << 8n) | BigInt(octet);
  }
  return bits;
}

function parseIpv6(text: string): bigint | undefined {
  let hex = text;
  const lastColon = text.lastIndexOf(":");
  if (text.includes(".", lastColon)) {
    // an embedded IPv4 address in the last 32 bits (::ffff:1.2.3.4): rewrite it as two groups
    const v4 = parseIpv4(text.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    hex = `${text.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const halves = hex.split("::");
  if (halves.length > 2) return undefined;
  const groups = (half: string | undefined) => (half ? half.split(":") : []);
  const head = groups(halves[0]);
  const back = groups(halves[1]);
  const missing = 8 - head.length - back.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  let bits = 0n;
  for (const word of [...head, ...Array<string>(halves.length === 1 ? 0 : missing).fill("0"), ...back]) {
    if (!/^[0-9a-f]{1,4}$/i.test(word)) return undefined;
    bits = (bits << 16n) | BigInt(Number.parseInt(word, 16));
  }
  return bits;
}

/** An address as written in a URL host or a DNS answer (brackets and `%zone` allowed), or undefined. */
export function parseIp(text: string): Ip | undefined {
  const bare = text.replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "");
  const version = isIP(bare);
  if (version === 4) {
    const bits = parseIpv4(bare);
    return bits === undefined ? undefined : { version: 4, bits };
  }
  if (version === 6) {
    const bits = parseIpv6(bare);
    return bits === undefined ? undefined : { version: 6, bits };
  }
  return undefined;
}

/** `10.0.0.0/8`, `fd00::/8`, or a single address (a /32 or /128). Throws on anything else. */
export function parseNetwork(text: string): Network {
  const [address = "", prefixText] = text.trim().split("/");
  const ip = parseIp(address);
  if (!ip) throw new Error(`"${text}" is not an IP address or CIDR network`);
  const width = ip.version === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? width : Number(prefixText);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > width || !/^\d*$/.test(prefixText ?? "")) {
    throw new Error(`"${text}" has a prefix length outside 0-${width}`);
  }
  return { ...ip, prefix };
}

export function inNetwork(ip: Ip, network: Network): boolean {
  if (ip.version !== network.version) return false;
  const shift = BigInt((ip.version === 4 ? 32 : 128) - network.prefix);
  return ip.bits >> shift === network.bits >> shift;
}

export function formatIp(ip: Ip): string {
  if (ip.version === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => String((ip.bits >> shift) & 0xffn)).join(".");
  }
  const words = Array.from({ length: 8 }, (_, index) => ((ip.bits >> BigInt(112 - 16 * index)) & 0xffffn).toString(16));
  return words.join(":").replace(/(^|:)0(:0)+(:|$)/, "::");
}

const V4_RANGES: [string, string][] = [
  ["169.254.169.254/32", "cloud metadata"],
  ["0.0.0.0/8", "this network"],
  ["10.0.0.0/8", "private"],
  ["100.64.0.0/10", "carrier-grade NAT"],
  ["127.0.0.0/8", "loopback"],
  ["169.254.0.0/16", "link-local"],
  ["172.16.0.0/12", "private"],
  ["192.0.0.0/24", "IETF protocol assignments"],
  ["192.0.2.0/24", "documentation"],
  ["192.88.99.0/24", "6to4 relay"],
  ["192.168.0.0/16", "private"],
  ["198.18.0.0/15", "benchmarking"],
  ["198.51.100.0/24", "documentation"],
  ["203.0.113.0/24", "documentation"],
  ["224.0.0.0/4", "multicast"],
  ["240.0.0.0/4", "reserved"],
];

const V6_RANGES: [string, string][] = [
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  ["::/96", "IPv4-compatible"],
  ["64:ff9b:1::/48", "local NAT64"],
  ["100::/64", "discard"],
  ["2001::/32", "Teredo"],
  ["2001:db8::/32", "documentation"],
  ["fc00::/7", "unique local"],
  ["fe80::/10", "link-local"],
  ["fec0::/10", "site-local"],
  ["ff00::/8", "multicast"],
];

const named = (ranges: [string, string][]) =>
  ranges.map(([cidr, name]) => ({ network: parseNetwork(cidr), label: `${name} ${cidr}` }));
const SPECIAL = [...named(V4_RANGES), ...named(V6_RANGES)];

const MAPPED = parseNetwork("::ffff:0:0/96");
const NAT64 = parseNetwork("64:ff9b::/96");
const SIX_TO_FOUR = parseNetwork("2002::/16");

/**
 * The IPv4 address an IPv6 address carries and would reach: IPv4-mapped (`::ffff:a.b.c.d`),
 * NAT64 (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::`).
 */
export function embeddedIpv4(ip: Ip): Ip | undefined {
  if (ip.version !== 6) return undefined;
  if (inNetwork(ip, MAPPED) || inNetwork(ip, NAT64)) return { version: 4, bits: ip.bits & 0xffffffffn };
  if (inNetwork(ip, SIX_TO_FOUR)) return { version: 4, bits: (ip.bits >> 80n) & 0xffffffffn };
  return undefined;
}

/**
 * Why an address must not be reached from a flow ("loopback 127.0.0.0/8"), or undefined for
 * a public unicast address. An IPv6 address embedding an IPv4 one is judged by that address.
 */
export function specialRange(ip: Ip): string | undefined {
  const inner = embeddedIpv4(ip);
  if (inner) {
    const reason = specialRange(inner);
    if (!reason) return undefined;
    const kind = inNetwork(ip, MAPPED) ? "IPv4-mapped" : inNetwork(ip, NAT64) ? "NAT64" : "6to4";
    return `${kind} ${formatIp(inner)}, ${reason}`;
  }
  return SPECIAL.find(({ network }) => inNetwork(ip, network))?.label;
}

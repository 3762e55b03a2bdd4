import { describe, expect, test } from "bun:test";
import { formatIp, inNetwork, parseIp, parseNetwork, specialRange } from "./addresses.ts";

const rangeOf = (text: string) => {
  const ip = parseIp(text);
  if (!ip) throw new Error(`unparsed ${text}`);
  return specialRange(ip);
};

describe("specialRange", () => {
  test.each([
    ["127.0.0.1", "loopback 127.0.0.0/8"],
    ["127.255.0.9", "loopback 127.0.0.0/8"],
    ["10.0.0.1", "private 10.0.0.0/8"],
    ["172.16.0.1", "private 172.16.0.0/12"],
    ["172.31.255.255", "private 172.16.0.0/12"],
    ["192.168.1.1", "private 192.168.0.0/16"],
    ["169.254.169.254", "cloud metadata 169.254.169.254/32"],
    ["169.254.1.1", "link-local 169.254.0.0/16"],
    ["100.64.0.1", "carrier-grade NAT 100.64.0.0/10"],
    ["100.127.255.255", "carrier-grade NAT 100.64.0.0/10"],
    ["0.0.0.0", "this network 0.0.0.0/8"],
    ["224.0.0.251", "multicast 224.0.0.0/4"],
    ["255.255.255.255", "reserved 240.0.0.0/4"],
    ["::1", "loopback ::1/128"],
    ["[::1]", "loopback ::1/128"],
    ["::", "unspecified ::/128"],
    ["fc00::1", "unique local fc00::/7"],
    ["fd12:3456::1", "unique local fc00::/7"],
    ["fe80::1%eth0", "link-local fe80::/10"],
    ["ff02::1", "multicast ff00::/8"],
    ["::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1, loopback 127.0.0.0/8"],
    ["::ffff:7f00:1", "IPv4-mapped 127.0.0.1, loopback 127.0.0.0/8"],
    ["::ffff:169.254.169.254", "IPv4-mapped 169.254.169.254, cloud metadata 169.254.169.254/32"],
    ["64:ff9b::10.0.0.1", "NAT64 10.0.0.1, private 10.0.0.0/8"],
    ["2002:c0a8:0101::1", "6to4 192.168.1.1, private 192.168.0.0/16"],
    ["::127.0.0.1", "IPv4-compatible ::/96"],
  ])("%s is %s", (address, reason) => {
    expect(rangeOf(address)).toBe(reason);
  });

  test.each([
    "8.8.8.8",
    "1.1.1.1",
    "172.32.0.1",
    "100.128.0.1",
    "169.255.0.1",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
  ])("%s is public", (address) => {
    expect(rangeOf(address)).toBeUndefined();
  });
});

describe("parseIp", () => {
  test.each(["", "localhost", "1.2.3", "1.2.3.256", "01.2.3.4x", "1::2::3", "12345::", "::ffff:1.2.3"])(
    "refuses %p",
    (text) => {
      expect(parseIp(text)).toBeUndefined();
    },
  );

  test("reads both notations of the same IPv6 address alike", () => {
    expect(parseIp("::ffff:10.1.2.3")).toEqual(parseIp("0:0:0:0:0:ffff:a01:203"));
    expect(formatIp({ version: 4, bits: parseIp("10.1.2.3")?.bits ?? 0n })).toBe("10.1.2.3");
  });
});

describe("parseNetwork", () => {
  test("matches addresses inside a CIDR and a single address", () => {
    const net = parseNetwork("10.1.0.0/16");
    expect(inNetwork(parseIp("10.1.200.3") ?? net, net)).toBe(true);
    expect(inNetwork(parseIp("10.2.0.1") ?? net, net)).toBe(false);
    const one = parseNetwork("127.0.0.1");
    expect(inNetwork(parseIp("127.0.0.1") ?? one, one)).toBe(true);
    expect(inNetwork(parseIp("127.0.0.2") ?? one, one)).toBe(false);
    const v6 = parseNetwork("fd00::/8");
    expect(inNetwork(parseIp("fd00:1::5") ?? v6, v6)).toBe(true);
  });

  test.each(["10.0.0.0/33", "10.0.0.0/x", "example.com", "fd00::/129"])("refuses %p", (text) => {
    expect(() => parseNetwork(text)).toThrow();
  });
});

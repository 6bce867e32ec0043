// The pflog0 monitor's pure parts: tcpdump -e lines (as print-pflog.c prints them) → blocked packets of sbx anchors, deduplicated, as audit entries.
import { describe, expect, test } from "bun:test";
import { auditOf, parseBlockLine } from "../../../../src/drivers/linux-user/monitor";
import { auditOfPflog, monitorCommand, parsePflogLine, parsePflogRuleset, pflogFilter } from "../../../../src/drivers/macos/monitor";

// pflog carries the anchor's own name (last path component, ≤15 bytes) and, after a `user` match, the socket's uid.
const TCP4 = "00:00:00.000000 rule 1.sbx_7001.1/0(match) [uid 7001]: block out on en0: 192.168.1.20.52144 > 93.184.216.34.443: Flags [S], seq 3911571130, win 65535, options [mss 1460,nop,wscale 6,nop,nop,TS val 1 ecr 0,sackOK,eol], length 0";
const DNS = " 00:00:01.250000 rule 1.sbx_7001.2/0(match) [uid 7001]: block out on en0: 192.168.1.20.61234 > 1.1.1.1.53: 4242+ TXT? c2VjcmV0.tunnel.example. (40)";
const TCP6 = "00:00:00.000310 rule 2.sbx_7001.3/0(match) [uid 7001]: block out on en0: 2001:db8::20.50111 > 2606:4700::1111.443: Flags [S], seq 1, win 65535, length 0";
const OTHER = "00:00:00.000001 rule 4.250.ApplicationFirewall.1/0(match): block in on en0: 10.0.0.9.5353 > 224.0.0.251.5353: UDP, length 40";
const MAIN = "00:00:00.000002 rule 5/0(match): block out on en0: 10.0.0.9.5000 > 10.0.0.1.80: Flags [S], seq 1, win 1024, length 0";
const PASS = "00:00:00.000003 rule 1.sbx_7001.0/0(match) [uid 7001]: pass out on lo0: 127.0.0.1.50000 > 127.0.0.1.17001: Flags [S], seq 1, win 65535, length 0";

describe("parsePflogLine", () => {
  test.each([
    [TCP4, { anchor: "sbx_7001", uid: 7001, socketUid: 7001, rule: 1, proto: "tcp", family: "ipv4", dst: "93.184.216.34", dstPort: 443, src: "192.168.1.20", srcPort: 52144, action: "block", direction: "out", iface: "en0", query: null }],
    [DNS, { uid: 7001, proto: "udp", dst: "1.1.1.1", dstPort: 53, query: "c2VjcmV0.tunnel.example" }],
    [TCP6, { uid: 7001, proto: "tcp", family: "ipv6", dst: "2606:4700::1111", dstPort: 443, src: "2001:db8::20" }],
    [OTHER, { uid: null, socketUid: null, proto: "udp", anchor: "250.ApplicationFirewall", direction: "in" }],
    [MAIN, { uid: null, anchor: "", rule: 5, proto: "tcp" }],
    [PASS, { uid: 7001, action: "pass", iface: "lo0" }],
    // a PTY hands lines over with \r\n; the full anchor path (what pfctl prints) is understood too
    [`${TCP4.replace("sbx_7001", "com.apple/sbx_7001")}\r`, { uid: 7001, dst: "93.184.216.34", dstPort: 443 }],
  ])("%s", (line, want) => {
    expect(parsePflogLine(line)).toMatchObject(want);
  });

  test.each([
    "tcpdump: verbose output suppressed, use -v[v]... for full protocol decode",
    "listening on pflog0, link-type PFLOG (OpenBSD pflog file), snapshot length 524288 bytes",
    "sudo: a password is required",
    "",
    "00:00:00.000000 IP 1.2.3.4 > 5.6.7.8: ICMP echo request",
  ])("not a pflog entry: %j", (line) => {
    expect(parsePflogLine(line)).toBeNull();
  });

  test("only sbx_<uid> rulesets name a sandbox", () => {
    expect(parsePflogRuleset("sbx_7001")).toBe(7001);
    expect(parsePflogRuleset("com.apple/sbx_7001")).toBe(7001);
    for (const s of ["sbx_", "sbx_70x1", "xsbx_7001", "com.apple/x/sbx_7001", "250.ApplicationFirewall", ""]) expect(parsePflogRuleset(s)).toBeNull();
  });
});

describe("pflogFilter", () => {
  test("blocks of sbx anchors only; repeats within the window dropped, reported again after it", () => {
    let t = 0;
    const f = pflogFilter({ dedupeMs: 10_000, now: () => t });
    const seen = (l: string) => f(l)?.dst ?? null;
    expect(seen(TCP4)).toBe("93.184.216.34");
    t = 1000;
    expect(seen(TCP4)).toBeNull(); // SYN retry
    expect(seen(DNS)).toBe("1.1.1.1");
    expect(seen(OTHER)).toBeNull();
    expect(seen(MAIN)).toBeNull();
    expect(seen(PASS)).toBeNull();
    expect(seen("garbage")).toBeNull();
    t = 11_000;
    expect(seen(TCP4)).toBe("93.184.216.34");
  });
});

describe("auditOfPflog", () => {
  test("the same kind, action and detail fields as the Linux kernel-log audit", () => {
    const mac = auditOfPflog(parsePflogLine(TCP4) as Parameters<typeof auditOfPflog>[0]);
    const lin = auditOf(parseBlockLine("<4>[  451.760000] sbx-block uid=7001 IN= OUT=en0 SRC=192.168.1.20 DST=93.184.216.34 LEN=64 PROTO=TCP SPT=52144 DPT=443")!);
    expect(mac).toEqual(lin);
    expect(mac).toEqual({
      kind: "egress",
      action: "blocked-raw",
      detail: { uid: 7001, proto: "tcp", family: "ipv4", dst: "93.184.216.34", dport: 443, src: "192.168.1.20", out: "en0", summary: "tcp 93.184.216.34:443" },
    });
    const dns = auditOfPflog(parsePflogLine(DNS) as Parameters<typeof auditOfPflog>[0]);
    expect(dns.detail).toMatchObject({ query: "c2VjcmV0.tunnel.example", summary: "udp 1.1.1.1:53 (c2VjcmV0.tunnel.example)" });
  });

  test("the command is exactly what the sudoers rule allows", () => {
    expect(monitorCommand()).toEqual(["/usr/bin/sudo", "-n", "/usr/sbin/tcpdump", "-l", "-n", "-e", "-ttt", "-i", "pflog0"]);
  });
});

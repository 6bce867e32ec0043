// The pflog0 monitor: tcpdump lines → blocked-connection audit events for sandbox UIDs, deduplicated.
import { describe, expect, test } from "bun:test";
import { monitorCommand, parsePflogLine, runMonitor, type AuditEvent, type LineSource } from "../../../../src/backend/macos/monitor";

const TCP4 = "00:00:00.000000 rule 1.com.apple/sbx_7001.1/0(match): block out on en0: 192.168.1.20.52144 > 93.184.216.34.443: Flags [S], seq 3911571130, win 65535, options [mss 1460,nop,wscale 6,nop,nop,TS val 1 ecr 0,sackOK,eol], length 0";
const DNS = " 00:00:01.250000 rule 1.com.apple/sbx_7001.2/0(match): block out on en0: 192.168.1.20.61234 > 1.1.1.1.53: 4242+ TXT? c2VjcmV0.tunnel.example. (40)";
const TCP6 = "00:00:00.000310 rule 2.com.apple/sbx_7001.3/0(match): block out on en0: 2001:db8::20.50111 > 2606:4700::1111.443: Flags [S], seq 1, win 65535, length 0";
const OTHER = "00:00:00.000001 rule 4.com.apple/250.ApplicationFirewall.1/0(match): block in on en0: 10.0.0.9.5353 > 224.0.0.251.5353: UDP, length 40";

describe("parsePflogLine", () => {
  test.each([
    [TCP4, { uid: 7001, proto: "tcp", dst: "93.184.216.34", dstPort: 443, src: "192.168.1.20", srcPort: 52144, action: "block", direction: "out", iface: "en0", query: null }],
    [DNS, { uid: 7001, proto: "udp", dst: "1.1.1.1", dstPort: 53, query: "c2VjcmV0.tunnel.example" }],
    [TCP6, { uid: 7001, proto: "tcp", dst: "2606:4700::1111", dstPort: 443, src: "2001:db8::20" }],
    [OTHER, { uid: null, proto: "udp", anchor: "com.apple/250.ApplicationFirewall", direction: "in" }],
  ])("%s", (line, want) => {
    expect(parsePflogLine(line)).toMatchObject(want);
  });

  test.each(["tcpdump: listening on pflog0, link-type PFLOG", "", "00:00:00.000000 IP 1.2.3.4 > 5.6.7.8: ICMP echo request"])("not a pflog entry: %j", (line) => {
    expect(parsePflogLine(line)).toBeNull();
  });
});

function lines(xs: string[]): LineSource & { argv: (readonly string[])[] } {
  const argv: (readonly string[])[] = [];
  return {
    argv,
    async *lines(a: readonly string[]) {
      argv.push(a);
      for (const x of xs) yield x;
    },
  };
}

describe("runMonitor", () => {
  test("emits one audit event per new blocked destination of a known sandbox; ignores others and repeats", async () => {
    const src = lines([TCP4, TCP4, DNS, OTHER, TCP6.replace("sbx_7001", "sbx_7999"), "garbage"]);
    const got: AuditEvent[] = [];
    let t = 0;
    const n = await runMonitor(src, { sandboxOf: (uid) => (uid === 7001 ? "28008768e2f6" : null), emit: (e) => got.push(e), now: () => (t += 1000) });
    expect(n).toBe(2);
    expect(src.argv).toEqual([monitorCommand()]);
    expect(monitorCommand()).toEqual(["/usr/bin/sudo", "-n", "/usr/sbin/tcpdump", "-l", "-n", "-e", "-ttt", "-i", "pflog0"]);
    expect(got).toEqual([
      { sandboxId: "28008768e2f6", kind: "pf", action: "blocked", detail: { uid: 7001, proto: "tcp", dst: "93.184.216.34", dstPort: 443, iface: "en0", query: null } },
      { sandboxId: "28008768e2f6", kind: "pf", action: "blocked", detail: { uid: 7001, proto: "udp", dst: "1.1.1.1", dstPort: 53, iface: "en0", query: "c2VjcmV0.tunnel.example" } },
    ]);
  });

  test("a repeat after the dedupe window is reported again", async () => {
    let t = 0;
    const got: AuditEvent[] = [];
    await runMonitor(lines([TCP4, TCP4]), { sandboxOf: () => "x", emit: (e) => got.push(e), now: () => (t += 20_000) });
    expect(got).toHaveLength(2);
  });
});

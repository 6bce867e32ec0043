// Kernel-log lines with sbx's prefix parse into block events; the poller reports each line once.
import { describe, expect, test } from "bun:test";
import { auditOf, KernelLogMonitor, parseBlockLine } from "../../../../src/drivers/linux-user/monitor";
import { FakeExec } from "../../../fakes/exec";

const V4 = "<4>[  451.765363] sbx-block uid=999 IN= OUT=eth0 SRC=192.0.2.2 DST=10.231.9.9 LEN=60 TOS=0x00 PREC=0x00 TTL=64 ID=2129 DF PROTO=TCP SPT=57458 DPT=80 WINDOW=65280 RES=0x00 SYN URGP=0 ";
const V6 = "<4>[  452.000001] sbx-block uid=999 IN= OUT=lo SRC=0000:0000:0000:0000:0000:0000:0000:0001 DST=0000:0000:0000:0000:0000:0000:0000:0001 LEN=80 TC=0 HOPLIMIT=64 FLOWLBL=1 PROTO=UDP SPT=40000 DPT=53 LEN=40 ";

describe("parseBlockLine", () => {
  test("IPv4 TCP", () => {
    expect(parseBlockLine(V4)).toEqual({ ts: 451.765363, uid: 999, family: "ipv4", proto: "tcp", src: "192.0.2.2", dst: "10.231.9.9", sport: 57458, dport: 80, out: "eth0" });
  });
  test("IPv6 UDP (DNS)", () => {
    expect(parseBlockLine(V6)).toMatchObject({ uid: 999, family: "ipv6", proto: "udp", dport: 53, out: "lo" });
  });
  test("other lines are not events", () => {
    expect(parseBlockLine("<6>[ 1.0] EXT4-fs (vda): mounted")).toBeNull();
    expect(parseBlockLine("<4>[ 1.0] sbxexp uid=9 SRC=1.1.1.1")).toBeNull();
  });
  test("audit shape", () => {
    expect(auditOf(parseBlockLine(V4)!)).toMatchObject({ kind: "egress", action: "blocked-raw", detail: { summary: "tcp 10.231.9.9:80" } });
  });
});

describe("KernelLogMonitor", () => {
  test("reports new lines once, filtered by uid", async () => {
    const other = V4.replace("uid=999", "uid=12").replace("451.765363", "453.0");
    const exec = new FakeExec()
      .expect(["dmesg", "--raw", "--kernel"], { stdout: `${V4}\n` })
      .expect(["dmesg", "--raw", "--kernel"], { stdout: `${V4}\n${V6}\n${other}\n` })
      .expect(["dmesg", "--raw", "--kernel"], { stdout: `${V4}\n${V6}\n${other}\n` });
    const m = new KernelLogMonitor(exec, () => new Set([999]));
    await m.skipExisting();
    expect((await m.poll()).map((e) => e.ts)).toEqual([452.000001]);
    expect(await m.poll()).toEqual([]);
    exec.assertDone();
  });
});

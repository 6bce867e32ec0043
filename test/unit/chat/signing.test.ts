// Signed requests: Slack's worked example verifies byte for byte; the window is five minutes either way and no more;
// a timestamp that is not plain seconds, a signature of another version or length, and a changed byte are refused;
// the memory of seen requests is bounded and refuses rather than forgets a key that could still be replayed.
import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { SeenOnce, sign, verify } from "../../../src/chat/signing";

// docs.slack.dev, "Verifying requests from Slack": the worked example.
const DOC_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
const DOC_TS = "1531420618";
const DOC_BODY =
  "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
const DOC_SIG = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
const at = (s: number) => s * 1000;

describe("signed-request: Slack's scheme as Slack documents it", () => {
  test("the worked example signs and verifies (at its own time, and one minute later)", () => {
    expect(sign(DOC_SECRET, "v0", DOC_TS, DOC_BODY)).toBe(DOC_SIG);
    expect(verify(DOC_SECRET, "v0", { timestamp: DOC_TS, signature: DOC_SIG, body: DOC_BODY }, at(1531420618 + 60)).ok).toBe(true);
    expect(verify(DOC_SECRET, "v0", { timestamp: DOC_TS, signature: DOC_SIG, body: new TextEncoder().encode(DOC_BODY) }, at(1531420618)).ok).toBe(true);
  });

  test("five minutes either way is the window: 300 s passes, 301 s is stale", () => {
    const t = 1531420618;
    const check = (now: number) => verify(DOC_SECRET, "v0", { timestamp: DOC_TS, signature: DOC_SIG, body: DOC_BODY }, at(now));
    expect([check(t + 300).ok, check(t - 300).ok]).toEqual([true, true]);
    expect([check(t + 301), check(t - 301)]).toEqual([{ ok: false, why: "stale" }, { ok: false, why: "stale" }]);
  });

  test("refused: a changed byte, a v1 signature for a v0 scheme, a timestamp not in plain seconds, headers missing", () => {
    const t = at(1531420618);
    const base = { timestamp: DOC_TS, signature: DOC_SIG, body: DOC_BODY };
    expect(verify(DOC_SECRET, "v0", { ...base, body: `${DOC_BODY} ` }, t)).toEqual({ ok: false, why: "bad-signature" });
    expect(verify(DOC_SECRET, "v0", { ...base, signature: DOC_SIG.replace("v0=", "v1=") }, t)).toEqual({ ok: false, why: "bad-signature" });
    expect(verify(DOC_SECRET, "v0", { ...base, signature: DOC_SIG.slice(0, -1) }, t)).toEqual({ ok: false, why: "bad-signature" });
    expect(verify(DOC_SECRET, "v0", { ...base, signature: DOC_SIG.toUpperCase() }, t)).toEqual({ ok: false, why: "bad-signature" });
    for (const ts of ["1.531420618e9", "-1531420618", "1531420618.5", "0x5b47", ""]) {
      expect({ ts, r: verify(DOC_SECRET, "v0", { ...base, timestamp: ts }, t) }).toEqual({ ts, r: { ok: false, why: ts === "" ? "missing" : "bad-timestamp" } });
    }
    expect(verify(DOC_SECRET, "v0", { ...base, signature: null }, t)).toEqual({ ok: false, why: "missing" });
  });
});

describe("signed-request: sbx's v1 scheme is the same construction, its own prefix", () => {
  test("v1=hex(HMAC-SHA256(secret, 'v1:' + ts + ':' + body)), as the help topic documents", () => {
    const body = '{"approval":1,"sandbox":2,"choice":"deny","nonce":"0123456789abcdef"}';
    const want = `v1=${createHmac("sha256", "s3cret").update(`v1:1700000000:${body}`).digest("hex")}`;
    expect(sign("s3cret", "v1", "1700000000", body)).toBe(want);
    expect(verify("s3cret", "v1", { timestamp: "1700000000", signature: want, body }, at(1700000000)).ok).toBe(true);
    // A Slack-scheme signature of the same bytes is not an sbx one.
    expect(verify("s3cret", "v1", { timestamp: "1700000000", signature: sign("s3cret", "v0", "1700000000", body), body }, at(1700000000)).ok).toBe(false);
  });
});

describe("signed-request: seen once", () => {
  test("a key is new once, then seen until its time is up; full, it refuses new keys rather than forget live ones", () => {
    const s = new SeenOnce(2, 1000);
    expect([s.take("a", 0), s.take("a", 500), s.take("b", 500), s.take("c", 600)]).toEqual(["new", "seen", "new", "full"]);
    // a's time is up at 1000: room again, and a is new again (its timestamp is refused by then anyway).
    expect([s.take("c", 1000), s.take("a", 1400)]).toEqual(["new", "full"]);
    expect(s.take("a", 1600)).toBe("new");
    expect(s.size()).toBeLessThanOrEqual(2);
  });
});

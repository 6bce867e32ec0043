// The parent proxy's pure rules: where it is (config over environment), NO_PROXY as curl reads it, the CONNECT sbx
// speaks and the answers it takes, and what people are told (never the credentials).
import { describe, expect, test } from "bun:test";
import { parseConfig } from "../../../src/core/config";
import {
  buildProxyArgs,
  buildRelayWanted,
  forwardHead,
  readForwardOrConnect,
  closingAnswerHead,
  BodyEnd,
  relayRefusal,
  basicAuthorization,
  connectHead,
  noProxyMatches,
  noProxySurprises,
  parentFor,
  parentFromConfig,
  parentFromEnv,
  parentRefusalText,
  parseParentUrl,
  proxyVariables,
  readParentAnswer,
  readRelayRequest,
  storedCredentials,
} from "../../../src/core/parent-proxy";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("parent-proxy settings: where the host's proxy is", () => {
  test("the environment: lower case first, HTTPS for tunnels and HTTP for plain requests, ALL_PROXY behind both", () => {
    const r = parentFromEnv({ HTTPS_PROXY: "http://upper:1", https_proxy: "http://lower:2", HTTP_PROXY: "proxy.corp:3128", NO_PROXY: ".corp", no_proxy: "" });
    expect(r.problems).toEqual([]);
    expect(r.settings).toMatchObject({ source: "environment", https: { host: "lower", port: 2, shown: "http://lower:2" }, http: { host: "proxy.corp", port: 3128 }, noProxy: ".corp" });
    expect(parentFromEnv({ ALL_PROXY: "http://all:8080" }).settings).toMatchObject({ https: { host: "all" }, http: { host: "all" } });
    expect(parentFromEnv({ PATH: "/bin" }).settings).toBeNull();
  });

  test("inline credentials are decoded once; the URL shown never holds them", () => {
    const r = parentFromEnv({ HTTPS_PROXY: "http://jo%40corp:p%3Ass@[fd00::1]:3128/" });
    expect(r.settings!.https).toEqual({ host: "fd00::1", port: 3128, shown: "http://[fd00::1]:3128", credentials: { kind: "inline", user: "jo@corp", password: "p:ss" } });
  });

  test("what cannot be used is said and left out: SOCKS, TLS to the proxy, a path, garbage", () => {
    const r = parentFromEnv({ HTTPS_PROXY: "socks5h://127.0.0.1:1080", HTTP_PROXY: "https://proxy:443", ALL_PROXY: "http://proxy:3128/pac" });
    expect(r.settings).toBeNull();
    expect(r.problems.map((p) => p.split(":")[0])).toEqual(["HTTPS_PROXY", "HTTP_PROXY"]);
    expect(parseParentUrl("http://proxy:3128/pac")).toEqual({ ok: false, reason: "a proxy URL names a host and a port, no path" });
    expect(parseParentUrl("http://")).toMatchObject({ ok: false });
    expect(parseParentUrl("http://proxy")).toMatchObject({ ok: true, endpoint: { port: 80 } });
  });

  test("the config file: one URL for both, its credentials a stored secret's name, never in the URL", () => {
    const c = parentFromConfig({ url: "http://proxy.corp:3128", noProxy: [".corp", "10.0.0.0/8"], credentials: "PROXY_LOGIN" });
    expect(c.settings).toEqual({
      source: "config",
      https: { host: "proxy.corp", port: 3128, shown: "http://proxy.corp:3128", credentials: { kind: "secret", name: "PROXY_LOGIN" } },
      http: { host: "proxy.corp", port: 3128, shown: "http://proxy.corp:3128", credentials: { kind: "secret", name: "PROXY_LOGIN" } },
      noProxy: ".corp,10.0.0.0/8",
    });
    expect(parentFromConfig({ url: "http://u:p@proxy:1" }).settings).toBeNull();
    const parsed = parseConfig(JSON.stringify({ proxy: { url: "http://proxy.corp:3128", noProxy: [".corp"], credentials: "PROXY_LOGIN" } }), "config.json");
    expect(parsed.proxy).toEqual({ url: "http://proxy.corp:3128", noProxy: [".corp"], credentials: "PROXY_LOGIN" });
  });

  test("a config that puts credentials in the URL, a SOCKS proxy or a bad secret name is refused, naming the key and never the value", () => {
    const bad = (proxy: unknown) => {
      try {
        parseConfig(JSON.stringify({ proxy }), "config.json");
        return "accepted";
      } catch (e) {
        return (e as Error).message;
      }
    };
    const inline = bad({ url: "http://jo:hunter22@proxy:3128" });
    expect(inline).toContain("proxy.url: credentials go in a stored secret");
    expect(inline).not.toContain("hunter22");
    expect(bad({ url: "socks5://proxy:1080" })).toContain("proxy.url: socks5:// proxies are not supported");
    expect(bad({ url: "http://proxy:3128", credentials: "lower" })).toContain("proxy.credentials");
    expect(bad({ url: "http://proxy:3128", noProxy: ["a,b"] })).toContain("proxy.noProxy");
    expect(bad({ url: "http://proxy:3128", extra: 1 })).toContain("proxy");
  });

  test("the parent for a destination: by scheme, and none where NO_PROXY matches", () => {
    const s = parentFromEnv({ https_proxy: "http://p:1", http_proxy: "http://q:2", no_proxy: ".corp" }).settings;
    expect(parentFor(s, "https", "api.example.com")?.host).toBe("p");
    expect(parentFor(s, "http", "api.example.com")?.host).toBe("q");
    expect(parentFor(s, "https", "git.corp")).toBeNull();
    expect(parentFor(null, "https", "x")).toBeNull();
    expect(parentFor(parentFromEnv({ http_proxy: "http://q:2" }).settings, "https", "x")).toBeNull();
  });
});

describe("parent-proxy NO_PROXY: read exactly as curl reads it", () => {
  const cases: [string, string, boolean][] = [
    ["*", "anything.example", true],
    ["*", "10.1.2.3", true],
    [" *", "anything.example", false], // `*` means all only alone
    ["*,example.com", "a.example.org", false],
    ["*.corp", "a.corp", false], // literal: curl has no wildcards
    [".corp", "corp", true],
    [".corp", "a.b.corp", true],
    ["corp", "acorp", false],
    ["corp.", "a.corp.", true],
    ["Example.COM", "www.example.com", true],
    ["example.com", "example.com.evil", false],
    [" a.test , b.test ,,c.test", "c.test", true],
    ["a.test b.test", "b.test", false], // a blank not followed by a comma ends the list (today's lib/noproxy.c)
    ["10.0.0.0/8", "10.200.1.1", true],
    ["10.0.0.0/8", "11.0.0.1", false],
    ["10.0.0.0/8", "ten.corp", false], // names are never resolved to be compared with a CIDR
    ["10.1.2.3", "10.1.2.3", true],
    ["10.1.2.0/0", "10.1.2.3", false], // no bits is the exact address
    ["10.1.2.0/33", "10.1.2.3", false],
    ["10.1.2.3", "10.1.2.3.nip.io", false],
    ["::1", "[::1]", true],
    ["fd00::/8", "fd12::5", true],
    ["[fd00::]/8", "fd12::5", false], // an entry is an address, never in brackets
    ["fd00::/9", "fd00::1", true], // prefixes that are not whole bytes: the address arithmetic (curl's is inverted there)
    ["fd00::/9", "fd80::1", false],
    ["fd00::/8", "fe80::1", false],
    ["example.com", "[::1]", false],
    ["", "example.com", false],
  ];
  for (const [list, host, want] of cases) {
    test(`NO_PROXY=${JSON.stringify(list)} ${want ? "skips" : "keeps"} the parent for ${host}`, () => {
      expect(noProxyMatches(list, host)).toBe(want);
    });
  }

  test("entries people often mean otherwise are pointed out", () => {
    expect(noProxySurprises("*.corp, .ok, *")).toEqual(["'*.corp' is read literally (write '.corp' for a domain and every name under it)", "'*' matches everything only alone; beside other entries it matches nothing"]);
    expect(noProxySurprises("*")).toEqual([]);
    expect(noProxySurprises("a.corp b.corp")).toEqual(["'a.corp b.corp': separate entries with commas (curl, and sbx, read up to the blank and stop)"]);
  });
});

describe("parent-proxy CONNECT: what sbx says to the parent and takes from it", () => {
  test("CONNECT names the host sbx judged (IPv6 in brackets), with Basic credentials when it has some", () => {
    expect(connectHead("api.example.com", 443, null)).toBe("CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n");
    expect(connectHead("2001:db8::1", 443, basicAuthorization("u", "p"))).toBe("CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: [2001:db8::1]:443\r\nProxy-Authorization: Basic dTpw\r\n\r\n");
  });

  test("a 2xx opens the tunnel (its head's size told); anything else refuses it; garbage and endless heads are no answer", () => {
    expect(readParentAnswer(bytes("HTTP/1.1 200 Connection established\r\n"))).toEqual({ kind: "more" });
    expect(readParentAnswer(bytes("HTTP/1.0 200 OK\r\nVia: squid\r\n\r\nSSH-2.0"))).toEqual({ kind: "open", size: 31 });
    expect(readParentAnswer(bytes("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n"))).toEqual({ kind: "refused", status: 407, reason: "Proxy Authentication Required" });
    expect(readParentAnswer(bytes("HTTP/1.1 403 \x1b[31mno\r\n\r\n"))).toEqual({ kind: "refused", status: 403, reason: "?[31mno" });
    expect(readParentAnswer(bytes("SSH-2.0-OpenSSH\r\n\r\n"))).toMatchObject({ kind: "malformed" });
    expect(readParentAnswer(new Uint8Array(17 * 1024).fill(65))).toMatchObject({ kind: "malformed" });
  });

  test("a refusal's text names the parent and its status and what it means", () => {
    expect(parentRefusalText("http://proxy.corp:3128", 407, "Proxy Authentication Required")).toBe(
      "the parent proxy http://proxy.corp:3128 answered 407 Proxy Authentication Required: it wants credentials sbx does not have or it refused them (proxy.credentials in the config file)",
    );
    expect(parentRefusalText("http://p:1", 502, "")).toBe("the parent proxy http://p:1 answered 502: it could not reach the destination");
  });

  test("a stored secret is user:password on one line; its value is in no reason", () => {
    expect(storedCredentials("jo:pa:ss", "PROXY_LOGIN")).toEqual({ ok: true, authorization: basicAuthorization("jo", "pa:ss") });
    for (const v of ["nocolon-secretvalue", ":secretvalue", "jo:secret\nvalue"]) {
      const r = storedCredentials(v, "PROXY_LOGIN");
      expect(r.ok).toBe(false);
      expect(JSON.stringify(r)).not.toContain("secretvalue");
    }
    expect(storedCredentials(null, "PROXY_LOGIN")).toEqual({ ok: false, reason: "the stored secret PROXY_LOGIN (proxy.credentials) is not set: sbx secret set PROXY_LOGIN" });
  });

  test("a host tool gets both cases of each variable; the relay takes only CONNECT, one Proxy-Authorization", () => {
    expect(proxyVariables("http://127.0.0.1:9", ".corp")).toEqual({ HTTPS_PROXY: "http://127.0.0.1:9", https_proxy: "http://127.0.0.1:9", HTTP_PROXY: "http://127.0.0.1:9", http_proxy: "http://127.0.0.1:9", NO_PROXY: ".corp", no_proxy: ".corp" });
    expect(readRelayRequest(bytes("CONNECT API.GitHub.com:443 HTTP/1.1\r\nProxy-Authorization: Basic x\r\n\r\n"))).toEqual({ kind: "connect", host: "api.github.com", port: 443, authorization: "Basic x", size: 69 });
    expect(readRelayRequest(bytes("GET http://x/ HTTP/1.1\r\n\r\n"))).toMatchObject({ kind: "bad", status: 405 });
    expect(readRelayRequest(bytes("CONNECT x:443 HTTP/1.1\r\nProxy-Authorization: a\r\nproxy-authorization: b\r\n\r\n"))).toMatchObject({ kind: "bad", status: 400 });
    expect(readRelayRequest(bytes("CONNECT x HTTP/1.1\r\n\r\n"))).toMatchObject({ kind: "bad", status: 400 });
  });
});

describe("build-proxy: what an image build gets of the parent proxy", () => {
  test("none: nothing; a company proxy: Docker's predefined args in both cases, its NO_PROXY too", () => {
    expect(buildProxyArgs(null)).toEqual({ args: {}, notes: [] });
    const s = parentFromEnv({ HTTPS_PROXY: "http://proxy.corp:3128", HTTP_PROXY: "http://web.corp:8080", NO_PROXY: ".corp,10.0.0.0/8" }).settings;
    expect(buildProxyArgs(s)).toEqual({
      args: { HTTPS_PROXY: "http://proxy.corp:3128", https_proxy: "http://proxy.corp:3128", HTTP_PROXY: "http://web.corp:8080", http_proxy: "http://web.corp:8080", NO_PROXY: ".corp,10.0.0.0/8", no_proxy: ".corp,10.0.0.0/8" },
      notes: [],
    });
  });
  test("never its credentials (inline or stored): through the build's relay, or left out with a note that says why", () => {
    for (const s of [parentFromEnv({ HTTPS_PROXY: "http://ann:s3cr%40t@proxy.corp:3128" }).settings, parentFromConfig({ url: "http://proxy.corp:3128", credentials: "PROXY_LOGIN" }).settings]) {
      expect(buildRelayWanted(s)).toBe(true);
      const relayed = buildProxyArgs(s, { url: "http://sbx:pw@172.17.0.1:4000" });
      expect(relayed.args.HTTPS_PROXY).toBe("http://sbx:pw@172.17.0.1:4000");
      expect(relayed.notes).toEqual([]);
      for (const b of [relayed, buildProxyArgs(s), buildProxyArgs(s, { unavailable: "the engine names no gateway" })]) {
        expect(JSON.stringify(b)).not.toContain("ann");
        expect(JSON.stringify(b)).not.toContain("s3cr");
      }
      const left = buildProxyArgs(s, { unavailable: "the engine names no gateway" });
      expect(left.args).toEqual({});
      expect(left.notes.join("\n")).toContain("wants a login, which sbx never puts into an image build");
      expect(left.notes.join("\n")).toContain("the engine names no gateway");
    }
  });
  test("a parent on this machine's loopback (127.x, ::1, localhost): through the build's relay, else no args and a note", () => {
    for (const url of ["http://127.0.0.1:3128", "http://127.9.9.9:3128", "http://[::1]:3128", "http://localhost:3128"]) {
      const s = parentFromConfig({ url }).settings;
      expect({ url, wanted: buildRelayWanted(s) }).toEqual({ url, wanted: true });
      expect(buildProxyArgs(s, { url: "http://sbx:pw@172.17.0.1:4000" }).args.HTTP_PROXY).toBe("http://sbx:pw@172.17.0.1:4000");
      const b = buildProxyArgs(s);
      expect({ url, args: b.args }).toEqual({ url, args: {} });
      expect(b.notes.join("\n")).toContain("on this machine's loopback");
    }
    expect(buildRelayWanted(parentFromEnv({ HTTPS_PROXY: "http://proxy.corp:3128" }).settings)).toBe(false);
    expect(buildRelayWanted(null)).toBe(false);
  });
  test("each endpoint on its own: a plain HTTP parent without a login as it is, a TLS one with a login through the relay", () => {
    const s = parentFromEnv({ HTTPS_PROXY: "http://ann:pw@proxy.corp:3128", HTTP_PROXY: "http://web.corp:8080", NO_PROXY: ".corp" }).settings;
    expect(buildProxyArgs(s, { url: "http://sbx:r@172.17.0.1:4000" }).args).toEqual({
      HTTPS_PROXY: "http://sbx:r@172.17.0.1:4000", https_proxy: "http://sbx:r@172.17.0.1:4000", HTTP_PROXY: "http://web.corp:8080", http_proxy: "http://web.corp:8080", NO_PROXY: ".corp", no_proxy: ".corp",
    });
  });
});

describe("parent-proxy-scope: what a build step may ask the per-build relay", () => {
  test("CONNECT as the bridge's relay reads it; a plain request in absolute form, its head rewritten for the parent", () => {
    expect(readForwardOrConnect(bytes("CONNECT Pkgs.Corp:443 HTTP/1.1\r\nProxy-Authorization: Basic x\r\n\r\n"))).toMatchObject({ kind: "connect", host: "pkgs.corp", port: 443, authorization: "Basic x" });
    const r = readForwardOrConnect(bytes("GET http://Deb.Debian.org/debian/dists/x HTTP/1.1\r\nHost: evil.example\r\nProxy-Authorization: Basic relay\r\nConnection: keep-alive, X-Drop\r\nX-Drop: 1\r\nProxy-Connection: keep-alive\r\nKeep-Alive: 5\r\nUser-Agent: apt\r\n\r\nrest"));
    expect(r).toMatchObject({ kind: "forward", host: "deb.debian.org", port: 80, authorization: "Basic relay", body: { length: 0 } });
    if (r.kind !== "forward") throw new Error("not forward");
    expect(r.head).toBe("GET http://deb.debian.org:80/debian/dists/x HTTP/1.1\r\nHost: deb.debian.org:80\r\nUser-Agent: apt\r\nConnection: close");
    expect(forwardHead(r.head, "Basic real")).toEndWith("Connection: close\r\nProxy-Authorization: Basic real\r\n\r\n");
    expect(forwardHead(r.head, null)).toEndWith("Connection: close\r\n\r\n");
  });
  test("refused: origin form, https:// in absolute form, a user in the URL, two readings of a body's end, two logins, unreadable lengths", () => {
    for (const head of [
      "GET /x HTTP/1.1\r\nHost: a\r\n\r\n",
      "GET https://a/ HTTP/1.1\r\n\r\n",
      "GET http://u:p@a/ HTTP/1.1\r\n\r\n",
      "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
      "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
      "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
      "GET http://a/ HTTP/1.1\r\nProxy-Authorization: a\r\nproxy-authorization: b\r\n\r\n",
      "POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
      "POST http://a/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
      "GET http://a/ HTTP/2\r\n\r\n",
    ]) {
      expect({ head, kind: readForwardOrConnect(bytes(head)).kind }).toEqual({ head, kind: "bad" });
    }
    expect(readForwardOrConnect(bytes("POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\n\r\n"))).toMatchObject({ kind: "forward", body: { length: 5 } });
    const c = readForwardOrConnect(bytes("POST http://a/p HTTP/1.1\r\ntransfer-encoding: Chunked\r\nContent-Type: x\r\n\r\n"));
    expect(c).toMatchObject({ kind: "forward", body: "chunked" });
    if (c.kind === "forward") expect(c.head).toBe("POST http://a:80/p HTTP/1.1\r\nHost: a:80\r\nContent-Type: x\r\nTransfer-Encoding: chunked\r\nConnection: close");
    expect(relayRefusal(407, "why")).toContain('Proxy-Authenticate: Basic realm="sbx"');
  });
});

describe("parent-proxy-scope: a forwarded body is passed on to its end and not a byte further", () => {
  const feed = (e: BodyEnd, parts: string[]) => parts.map((p) => e.take(bytes(p)));
  test("a Content-Length's bytes, however the reads cut them; what follows is not the body's", () => {
    const e = new BodyEnd({ length: 5 });
    expect(feed(e, ["ab", "cdGET http://evil/ HTTP/1.1"])).toEqual([2, 3]);
    expect(e.done).toBe(true);
    expect(new BodyEnd({ length: 0 }).done).toBe(true);
  });
  test("chunked: sizes (with extensions), data, the last chunk and trailers, cut at every byte; a pipelined request after it is left", () => {
    const body = "5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
    const after = "GET http://evil.test/ HTTP/1.1\r\n\r\n";
    for (let cut = 0; cut <= body.length; cut++) {
      const e = new BodyEnd("chunked");
      const [a, b] = feed(e, [body.slice(0, cut), body.slice(cut) + after]);
      expect({ cut, taken: a! + b!, done: e.done }).toEqual({ cut, taken: body.length, done: true });
    }
  });
  test("framing that cannot be read is refused (where the body ends would be a guess)", () => {
    for (const bad of ["zz\r\n", "5\r\nhelloXX", "5\nhello\r\n", `${"1".repeat(13)}\r\n`, `0\r\n${"X-T: 1\r\n".repeat(1200)}`, `5;${"e".repeat(2000)}\r\n`]) {
      expect(() => new BodyEnd("chunked").take(bytes(bad))).toThrow();
    }
  });
});

describe("parent-proxy-scope: a forwarded request's answer says its connection closes", () => {
  test("Connection: close (its own connection headers dropped); an interim 1xx as it is", () => {
    expect(closingAnswerHead("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\nContent-Length: 2")).toBe(
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\nProxy-Connection: close\r\n\r\n",
    );
    expect(closingAnswerHead("HTTP/1.1 100 Continue")).toBe("HTTP/1.1 100 Continue\r\n\r\n");
  });
});

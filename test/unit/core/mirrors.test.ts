// package-mirrors, the readers: what the host's npm, pip (and uv), Go and cargo settings name instead of the public
// registries, and what of it may cross into a sandbox. Hostile first: a credential in any place a tool keeps one (npm's
// token lines, a URL's user and password, cargo's token) never reaches what a sandbox gets, and the note says how to bind
// it instead; an address that means something else inside (this machine's loopback, a file path) is not carried and
// the note says why. Then each reader with the fixtures real setups have, what a sandbox gets, and the presets.
import { describe, expect, test } from "bun:test";
import {
  cargoMirrors,
  goMirrors,
  judgeRegistryUrl,
  mergePlans,
  mirrorDelivery,
  npmMirrors,
  pipMirrors,
  presetOffer,
  registryHostsInPresets,
  type MirrorPlan,
} from "../../../src/core/mirrors";
import { levelLists, levelMirrors } from "../../../src/core/levels";
import { PRESETS } from "../../../src/core/presets";

const NPM_TOKEN = "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
const PASSWORD = "s3cret-Passw0rd";
const CARGO_TOKEN = "cio_Zx81kLmN0pQrStUv12345";

/** Everything a sandbox would get of a plan, as one text: the variables, npm's lines, cargo's config. */
function delivered(p: MirrorPlan): string {
  const d = mirrorDelivery({ settings: p.settings });
  return JSON.stringify([d.env, d.npmrc, d.cargoToml, p.settings]);
}

const npmrc = (text: string) => ({ shown: "~/.npmrc", text });

describe("package-mirrors: a credential never crosses, and is said with the way to bind it", () => {
  test("npm: a registry's _authToken line stays on the host; its registry is carried; the note names the exact command", () => {
    const p = npmMirrors(npmrc(`registry=https://npm.corp.example/api/npm/all/\n//npm.corp.example/api/npm/all/:_authToken=${NPM_TOKEN}\nalways-auth=true\n`), {});
    expect(delivered(p)).not.toContain(NPM_TOKEN);
    expect(delivered(p)).not.toContain("_authToken");
    expect(mirrorDelivery({ settings: p.settings }).npmrc).toEqual(["registry=https://npm.corp.example/api/npm/all/"]);
    expect(p.notes).toEqual([
      {
        tool: "npm",
        from: "~/.npmrc line 2",
        key: "//npm.corp.example/…:_authToken",
        why: "not carried: npm's credential for npm.corp.example",
        hint: "sbx secret set NPM_TOKEN_NPM_CORP_EXAMPLE --host npm.corp.example --npmrc",
      },
    ]);
    // The note holds no value either.
    expect(JSON.stringify(p.notes)).not.toContain(NPM_TOKEN);
  });

  test("npm: _auth, _password, a token written through ${VAR}, a client certificate: each left, each said", () => {
    const text = [
      "registry=https://npm.corp.example/",
      "_auth=dXNlcjpwYXNzd29yZA==",
      "//npm.corp.example/:_password=cGFzc3dvcmQ=",
      "//npm.corp.example/:username=ann",
      "//other.example/:_authToken=${NPM_TOKEN}",
      "//npm.corp.example/:certfile=/home/ann/.certs/me.pem",
    ].join("\n");
    const p = npmMirrors(npmrc(text), { NPM_TOKEN });
    expect(delivered(p)).not.toMatch(/dXNlcjpwYXNzd29yZA|cGFzc3dvcmQ|npm_AbCd|me\.pem|_auth|_password/);
    expect(p.notes.map((n) => n.key)).toEqual(["_auth", "//npm.corp.example/…:_password", "//other.example/…:_authToken", "//npm.corp.example/…:certfile"]);
    expect(p.notes[0]!.hint).toContain("--header 'Authorization: Basic {}'");
    expect(p.notes[1]!.hint).toStartWith("printf %s 'USER:PASSWORD' | base64");
    expect(p.notes[2]!.hint).toBe("sbx secret set NPM_TOKEN_OTHER_EXAMPLE --host other.example --npmrc");
    expect(p.notes[3]!.why).toContain("client certificate");
  });

  test("pip: an index URL with user:password@ is carried without them, and said with the Basic binding", () => {
    const p = pipMirrors([{ shown: "~/.config/pip/pip.conf", text: `[global]\nindex-url = https://ann:${PASSWORD}@pypi.corp.example/simple/\n` }], {});
    expect(delivered(p)).not.toContain(PASSWORD);
    expect(delivered(p)).not.toContain("ann:");
    expect(mirrorDelivery({ settings: p.settings }).env).toEqual({ PIP_INDEX_URL: "https://pypi.corp.example/simple/" });
    expect(p.notes).toEqual([
      {
        tool: "pip",
        from: "~/.config/pip/pip.conf line 2",
        key: "PIP_INDEX_URL",
        why: "carried without its user and password: a credential never enters a sandbox",
        hint: "printf %s 'USER:PASSWORD' | base64 | tr -d '\\n' | sbx secret set PIP_INDEX_AUTH_PYPI_CORP_EXAMPLE --host pypi.corp.example --header 'Authorization: Basic {}'",
      },
    ]);
  });

  test("pip: the variable's user and password, and a token in the query, are taken out the same way", () => {
    const p = pipMirrors([], { PIP_INDEX_URL: `https://ann:${PASSWORD}@pypi.corp.example/simple/?token=${PASSWORD}x`, PIP_EXTRA_INDEX_URL: `https://x.corp.example/simple?access_token=${PASSWORD}` });
    expect(delivered(p)).not.toContain(PASSWORD);
    expect(p.settings.map((s) => [s.key, s.value])).toEqual([
      ["PIP_INDEX_URL", "https://pypi.corp.example/simple/"],
      ["PIP_EXTRA_INDEX_URL", "https://x.corp.example/simple"],
    ]);
    expect(p.notes.map((n) => n.why)).toEqual([
      "carried without its user and password, its token parameter: a credential never enters a sandbox",
      "carried without its access_token parameter: a credential never enters a sandbox",
    ]);
  });

  test("Go: a GOPROXY with a password keeps its place in the list without it", () => {
    const p = goMirrors(null, { GOPROXY: `https://bot:${PASSWORD}@goproxy.corp.example/,direct` });
    expect(delivered(p)).not.toContain(PASSWORD);
    expect(p.settings[0]!.value).toBe("https://goproxy.corp.example/,direct");
    expect(p.notes[0]!.hint).toContain("sbx secret set GOPROXY_AUTH_GOPROXY_CORP_EXAMPLE --host goproxy.corp.example --header 'Authorization: Basic {}'");
  });

  test("cargo: a registry's token (in its config or its variable) never crosses; the note names cargo's own variable", () => {
    const cfg = { source: { "crates-io": { "replace-with": "corp" }, corp: { registry: "sparse+https://cargo.corp.example/index/" } }, registries: { corp: { index: "sparse+https://cargo.corp.example/index/", token: CARGO_TOKEN } }, registry: { token: CARGO_TOKEN } };
    const p = cargoMirrors({ shown: "~/.cargo/config.toml", value: cfg }, { CARGO_REGISTRIES_CORP_TOKEN: CARGO_TOKEN });
    expect(delivered(p)).not.toContain(CARGO_TOKEN);
    expect(delivered(p)).not.toContain("token");
    expect(p.notes.map((n) => n.hint)).toEqual([
      "sbx secret set CARGO_REGISTRIES_CORP_TOKEN --host cargo.corp.example",
      "sbx secret set CARGO_REGISTRY_TOKEN --host crates.io",
      "sbx secret set CARGO_REGISTRIES_CORP_TOKEN --host cargo.corp.example",
    ]);
  });
});

describe("package-mirrors: an address that means something else inside is not carried, and said", () => {
  test.each([
    ["localhost", "http://localhost:4873/"],
    ["127.0.0.1", "http://127.0.0.1:4873/"],
    ["another loopback address", "http://127.9.9.9:8080/"],
    ["a name under localhost", "http://npm.localhost:4873/"],
    ["IPv6 loopback", "http://[::1]:4873/"],
    ["a v4-mapped loopback", "http://[::ffff:127.0.0.1]:4873/"],
    ["a decimal loopback", "http://2130706433:4873/"],
    ["the unspecified address", "http://0.0.0.0:4873/"],
  ])("this machine's loopback: %s", (_what, url) => {
    const j = judgeRegistryUrl(url);
    expect(j.ok).toBe(false);
    if (!j.ok) {
      expect(j.why).toContain("this machine's loopback");
      expect(j.hint).toContain("sbx publish NAME");
    }
    const p = npmMirrors(npmrc(`registry=${url}\n`), {});
    expect(p.settings).toEqual([]);
    expect(p.notes[0]!.why).toStartWith("not carried: this machine's loopback");
  });

  test.each([
    ["file:", "file:///srv/pypi/simple"],
    ["a bare path", "/srv/pypi/simple"],
    ["a home path", "~/wheels"],
    ["a relative path", "./wheels"],
  ])("a path on this machine: %s", (_what, url) => {
    const p = pipMirrors([], { PIP_INDEX_URL: url });
    expect(p.settings).toEqual([]);
    expect(p.notes[0]!.why).toContain("a path on this machine");
  });

  test("a scheme sbx's proxy does not carry, and an address whose path is a key, are not carried", () => {
    expect(judgeRegistryUrl("ftp://mirror.corp.example/npm/")).toMatchObject({ ok: false, why: expect.stringContaining("only http and https") });
    expect(judgeRegistryUrl("https://npm.corp.example/t/Zk3mQ9xV7pL2wR8sT4nB6cY1/npm/")).toMatchObject({ ok: false, why: expect.stringContaining("holds what looks like a key") });
  });

  test("the address carried is the one judged: text another parser would read with another host is carried in the judged form", () => {
    // Python's urllib reads `good\@evil` as user `good\` at evil.example; WHATWG (and sbx) as good.example's path.
    const p = pipMirrors([], { PIP_INDEX_URL: "https://pypi.corp.example\\@evil.example/simple" });
    expect(p.settings[0]).toMatchObject({ value: "https://pypi.corp.example/@evil.example/simple", hosts: ["pypi.corp.example"] });
    expect(JSON.stringify(p.settings)).not.toContain("\\\\");
  });

  test("GOPROXY: a loopback or file: element leaves the list, the rest keeps its order and separators", () => {
    const p = goMirrors({ shown: "~/.config/go/env", text: "GOPROXY=https://goproxy.corp.example,http://127.0.0.1:3000|file:///srv/goproxy|direct\n" }, {});
    expect(p.settings).toEqual([{ tool: "go", key: "GOPROXY", value: "https://goproxy.corp.example,direct", from: "~/.config/go/env line 1", via: "env", hosts: ["goproxy.corp.example"], replaces: true }]);
    expect(p.notes.map((n) => n.why)).toEqual([expect.stringContaining("loopback"), expect.stringContaining("a path on this machine")]);
  });

  test("cargo: a directory or local-registry source is a path on this machine: said, nothing carried", () => {
    const p = cargoMirrors({ shown: "~/.cargo/config.toml", value: { source: { "crates-io": { "replace-with": "vendored" }, vendored: { directory: "/srv/vendor" } } } }, {});
    expect(p.settings).toEqual([]);
    expect(p.notes[0]!.why).toBe("not carried: a directory on this machine stands in for crates.io, and a sandbox cannot read the host's files");
  });

  test("cargo: a replace-with loop ends without hanging or carrying anything", () => {
    const p = cargoMirrors({ shown: "c", value: { source: { "crates-io": { "replace-with": "a" }, a: { "replace-with": "b" }, b: { "replace-with": "a" } } } }, {});
    expect(p.settings).toEqual([]);
  });

  test("pip: trusted-host (certificate checks off) is carried for the carried hosts only, never another", () => {
    const p = pipMirrors([{ shown: "/etc/pip.conf", text: "[global]\nindex-url = http://pypi.corp.example/simple\ntrusted-host = pypi.corp.example\n    pypi.org files.pythonhosted.org\n" }], {});
    expect(mirrorDelivery({ settings: p.settings }).env).toEqual({ PIP_INDEX_URL: "http://pypi.corp.example/simple", PIP_TRUSTED_HOST: "pypi.corp.example" });
  });
});

describe("package-mirrors: the readers", () => {
  test("npm: the default and scoped registries, the variable over the file, ${VAR} expanded, comments and quotes as npm's ini reads them", () => {
    const text = ['; company settings', "registry = \"https://npm.corp.example/\"", "@acme:registry=${ACME_REGISTRY} ; the scope's own", "# proxy=http://ignored", "fund=false"].join("\n");
    const p = npmMirrors(npmrc(text), { ACME_REGISTRY: "https://npm.acme.example:8443/", npm_config_registry: "https://npm2.corp.example/" });
    expect(p.settings).toEqual([
      { tool: "npm", key: "npm_config_registry", value: "https://npm2.corp.example/", from: "$npm_config_registry", via: "env", hosts: ["npm2.corp.example"], replaces: true },
      { tool: "npm", key: "@acme:registry", value: "https://npm.acme.example:8443/", from: "~/.npmrc", via: "npmrc", hosts: ["npm.acme.example:8443"], replaces: false },
    ]);
    expect(mirrorDelivery({ settings: p.settings })).toEqual({ env: { npm_config_registry: "https://npm2.corp.example/" }, npmrc: ["@acme:registry=https://npm.acme.example:8443/"], cargoToml: null });
  });

  test("npm: no file, no variable: nothing", () => {
    expect(npmMirrors(null, {})).toEqual({ settings: [], notes: [] });
    expect(npmMirrors({ shown: "~/.npmrc", text: null }, {})).toEqual({ settings: [], notes: [] });
  });

  test("pip: files in pip's order (later wins), [install] over [global], continuation lines, the variables over every file, uv's own", () => {
    const files = [
      { shown: "/etc/pip.conf", text: "[global]\nindex-url = https://old.corp.example/simple\nextra-index-url = https://a.corp.example/simple\n" },
      { shown: "~/.config/pip/pip.conf", text: "[global]\nindex_url = https://pypi.corp.example/simple\n[install]\nextra-index-url =\n    https://b.corp.example/simple\n    https://c.corp.example/simple\n" },
    ];
    const p = pipMirrors(files, { UV_DEFAULT_INDEX: "https://uv.corp.example/simple" });
    expect(p.settings.map((s) => [s.key, s.value, s.from])).toEqual([
      ["PIP_INDEX_URL", "https://pypi.corp.example/simple", "~/.config/pip/pip.conf line 2"],
      ["PIP_EXTRA_INDEX_URL", "https://b.corp.example/simple https://c.corp.example/simple", "~/.config/pip/pip.conf line 4"],
      ["UV_DEFAULT_INDEX", "https://uv.corp.example/simple", "$UV_DEFAULT_INDEX"],
    ]);
    expect(p.settings[1]!.hosts).toEqual(["b.corp.example", "c.corp.example"]);
    const v = pipMirrors(files, { PIP_INDEX_URL: "https://env.corp.example/simple" });
    expect(v.settings[0]).toMatchObject({ key: "PIP_INDEX_URL", value: "https://env.corp.example/simple", from: "$PIP_INDEX_URL", replaces: true });
  });

  test("Go: the env file's settings, the variables over it, GOSUMDB's forms, private patterns as they are", () => {
    const p = goMirrors({ shown: "~/.config/go/env", text: "GOPROXY=goproxy.corp.example\nGOPRIVATE=*.corp.example,github.com/acme\nGONOSUMDB=*.corp.example\n" }, { GOSUMDB: "sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8 https://sum.corp.example" });
    expect(p.settings.map((s) => [s.key, s.value, s.hosts])).toEqual([
      ["GOPROXY", "https://goproxy.corp.example", ["goproxy.corp.example"]],
      ["GOSUMDB", "sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8 https://sum.corp.example", ["sum.corp.example"]],
      ["GOPRIVATE", "*.corp.example,github.com/acme", []],
      ["GONOSUMDB", "*.corp.example", []],
    ]);
    expect(goMirrors(null, { GOSUMDB: "off" }).settings).toEqual([{ tool: "go", key: "GOSUMDB", value: "off", from: "$GOSUMDB", via: "env", hosts: [], replaces: false }]);
    expect(goMirrors(null, { GOPROXY: "https://proxy.golang.org,direct" }).settings[0]!.replaces).toBe(false);
  });

  test("cargo: crates.io's replacement followed to its registry (a source or a named registry), named registries and the default as variables", () => {
    const viaSource = cargoMirrors({ shown: "~/.cargo/config.toml", value: { source: { "crates-io": { "replace-with": "mirror" }, mirror: { "replace-with": "corp" }, corp: { registry: "sparse+https://cargo.corp.example/index/" } } } }, {});
    expect(mirrorDelivery({ settings: viaSource.settings }).cargoToml).toBe(
      '# carried by sbx from the host\'s cargo config: crates.io\'s mirror\n[source.crates-io]\nreplace-with = "corp"\n\n[source."corp"]\nregistry = "sparse+https://cargo.corp.example/index/"\n',
    );
    const viaRegistry = cargoMirrors({ shown: "c", value: { source: { "crates-io": { "replace-with": "my-corp" } }, registries: { "my-corp": { index: "sparse+https://cargo.corp.example/" }, tools: { index: "https://git.corp.example/tools-index" } }, registry: { default: "my-corp" } } }, {});
    const d = mirrorDelivery({ settings: viaRegistry.settings });
    expect(d.cargoToml).toContain('[registries."my-corp"]\nindex = "sparse+https://cargo.corp.example/"');
    expect(d.env).toEqual({ CARGO_REGISTRIES_MY_CORP_INDEX: "sparse+https://cargo.corp.example/", CARGO_REGISTRIES_TOOLS_INDEX: "https://git.corp.example/tools-index", CARGO_REGISTRY_DEFAULT: "my-corp" });
  });

  test("what is not a mirror is not carried: ordinary settings, the public registry's own defaults", () => {
    const all = mergePlans(
      npmMirrors(npmrc("save-exact=true\nfund=false\n"), {}),
      pipMirrors([{ shown: "p", text: "[global]\ntimeout = 60\n" }], {}),
      goMirrors({ shown: "g", text: "GOFLAGS=-mod=mod\nGOTOOLCHAIN=local\n" }, {}),
      cargoMirrors({ shown: "c", value: { net: { "git-fetch-with-cli": true }, registries: { "crates-io": { protocol: "sparse" } } } }, {}),
    );
    expect(all).toEqual({ settings: [], notes: [] });
  });
});

describe("package-mirrors: presets offer the mirror in place of the public registry", () => {
  const plan = mergePlans(
    npmMirrors(npmrc("registry=https://npm.corp.example/\n@acme:registry=https://npm.acme.example/\n"), {}),
    pipMirrors([], { PIP_EXTRA_INDEX_URL: "https://extra.corp.example/simple" }),
    goMirrors(null, { GOPROXY: "https://goproxy.corp.example,direct", GOSUMDB: "off" }),
    cargoMirrors({ shown: "c", value: { source: { "crates-io": { "replace-with": "corp" }, corp: { registry: "sparse+https://cargo.corp.example/index/" } } } }, {}),
  );
  const m = { settings: plan.settings };

  test("npm: the registry hosts go, the site stays, both mirrors are added", () => {
    expect(presetOffer("npm", PRESETS.npm, m)).toEqual({
      patterns: ["npmjs.com", "www.npmjs.com", "npm.corp.example", "npm.acme.example"],
      replaced: ["registry.npmjs.org", "registry.yarnpkg.com"],
      mirrors: [
        { host: "npm.corp.example", from: "~/.npmrc" },
        { host: "npm.acme.example", from: "~/.npmrc" },
      ],
    });
  });

  test("pypi: an extra index adds to the public one, never replaces it", () => {
    expect(presetOffer("pypi", PRESETS.pypi, m).patterns).toEqual([...PRESETS.pypi, "extra.corp.example"]);
  });

  test("go: the proxy in place of proxy.golang.org; GOSUMDB=off drops the checksum database", () => {
    expect(presetOffer("go", PRESETS.go, m)).toMatchObject({ patterns: ["go.dev", "dl.google.com", "goproxy.corp.example"], replaced: ["proxy.golang.org", "sum.golang.org"] });
  });

  test("crates: the mirror in place of crates.io's hosts; rustup's stays", () => {
    expect(presetOffer("crates", PRESETS.crates, m).patterns).toEqual(["static.rust-lang.org", "cargo.corp.example"]);
  });

  test("no mirror, or a preset that is no registry's: as it is", () => {
    expect(presetOffer("npm", PRESETS.npm, null).patterns).toEqual([...PRESETS.npm]);
    expect(presetOffer("github", PRESETS.github, m).patterns).toEqual([...PRESETS.github]);
  });

  test("balanced: a registry the repo uses is this machine's mirror where the sandbox carried one, the public one otherwise", () => {
    const setting = { level: "balanced" as const, repo: { registries: [{ preset: "npm", file: "package.json" }], registryHosts: [], forges: [] }, at: 0 };
    const withMirror = levelLists(setting, [], m).parts.map((p) => p.pattern);
    expect(withMirror).toEqual(expect.arrayContaining(["npm.corp.example", "npm.acme.example"]));
    expect(withMirror).not.toContain("registry.npmjs.org");
    expect(levelLists(setting, [], m).parts.find((p) => p.pattern === "npm.corp.example")!.why).toBe("npm registry (package.json), through this machine's mirror (~/.npmrc)");
    expect(levelLists(setting, [], null).parts.map((p) => p.pattern)).toContain("registry.npmjs.org");
    expect(levelMirrors({ mirrors: m })).toEqual(m);
    expect(levelMirrors({ mirrors: { settings: [{ tool: "npm" }] } })).toBeNull();
  });

  test("every registry host a mirror stands in for is in its preset (a renamed preset host would silently stop the swap)", () => {
    expect(registryHostsInPresets()).toEqual([]);
  });
});

// Pure: the images a Dockerfile builds on (its FROM lines and COPY --from / RUN --mount from= of an image), as the
// builder would resolve them, so sbx can tell before a build whether each is on this machine. A missing one would be
// pulled by the builder from a registry, which sbx does only when asked (--pull).

/** What a Dockerfile needs: images to have, and FROM lines whose image sbx cannot know before the build. */
export interface DockerfileBases {
  images: string[];
  unresolved: string[];
}

/** `$X`, `${X}`, `${X:-d}`, `${X-d}`, `${X:+a}`, `${X+a}` from `vars`; null when one is not known (nor defaulted). */
function expand(text: string, vars: Readonly<Record<string, string>>): string | null {
  let unknown = false;
  const out = text.replace(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g, (_m, braced: string | undefined, op: string | undefined, word: string | undefined, bare: string | undefined) => {
    const name = (braced ?? bare)!;
    const has = Object.hasOwn(vars, name);
    const v = has ? vars[name]! : undefined;
    if (op === ":-") return v !== undefined && v !== "" ? v : (word ?? "");
    if (op === "-") return v !== undefined ? v : (word ?? "");
    if (op === ":+") return v !== undefined && v !== "" ? (word ?? "") : "";
    if (op === "+") return v !== undefined ? (word ?? "") : "";
    if (v === undefined) unknown = true;
    return v ?? "";
  });
  return unknown ? null : out;
}

/** The Dockerfile's instructions, continuation lines joined, comments and parser directives left out. */
function instructions(text: string): string[] {
  const lines = text.split(/\r?\n/);
  // `# escape=`` ` (a parser directive, before anything else) makes the backtick the continuation character.
  let escape = "\\";
  for (const l of lines) {
    const m = /^\s*#\s*([a-zA-Z]+)\s*=\s*(\S+)\s*$/.exec(l);
    if (!m) break;
    if (m[1]!.toLowerCase() === "escape" && (m[2] === "`" || m[2] === "\\")) escape = m[2];
  }
  const out: string[] = [];
  let cur = "";
  for (const raw of lines) {
    if (cur === "" && /^\s*#/.test(raw)) continue;
    if (cur !== "" && /^\s*#/.test(raw)) continue; // a comment inside a continued instruction is dropped
    const trimmed = raw.replace(/\s+$/, "");
    if (trimmed.endsWith(escape)) {
      cur += `${trimmed.slice(0, -1)} `;
      continue;
    }
    cur += raw;
    if (cur.trim() !== "") out.push(cur.trim());
    cur = "";
  }
  if (cur.trim() !== "") out.push(cur.trim());
  return out;
}

/**
 * Pure: the images a build of this Dockerfile uses, with `buildArgs` over its global ARG defaults: each FROM that is
 * not an earlier stage or `scratch`, and each `--from=` (COPY, RUN --mount) that is neither a stage's name nor its index.
 */
export function dockerfileBases(text: string, buildArgs: Readonly<Record<string, string>> = {}): DockerfileBases {
  const globals: Record<string, string> = {};
  const stages: string[] = [];
  const images = new Set<string>();
  const unresolved: string[] = [];
  let seenFrom = false;
  const external = (ref: string) => {
    const r = ref.trim();
    if (r === "" || /^\d+$/.test(r) || stages.includes(r.toLowerCase())) return;
    if (r.toLowerCase() === "scratch") return;
    images.add(r);
  };
  for (const ins of instructions(text)) {
    const m = /^([A-Za-z]+)\s+([\s\S]*)$/.exec(ins);
    if (!m) continue;
    const op = m[1]!.toUpperCase();
    const rest = m[2]!;
    if (op === "ARG" && !seenFrom) {
      for (const part of rest.split(/\s+/)) {
        const a = /^([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?$/.exec(part);
        if (!a) continue;
        const name = a[1]!;
        if (Object.hasOwn(buildArgs, name)) globals[name] = buildArgs[name]!;
        else if (a[2] !== undefined) globals[name] = a[2].replace(/^"(.*)"$|^'(.*)'$/, "$1$2");
      }
      continue;
    }
    if (op === "FROM") {
      seenFrom = true;
      const words = rest.split(/\s+/).filter((w) => !w.startsWith("--"));
      const ref = words[0] ?? "";
      const as = words.length >= 3 && words[1]!.toUpperCase() === "AS" ? words[2]!.toLowerCase() : null;
      const image = expand(ref, globals);
      if (image === null) unresolved.push(`FROM ${ref}`);
      else external(image);
      stages.push(as ?? `\0${stages.length}`);
      continue;
    }
    if (op === "COPY" || op === "ADD" || op === "RUN") {
      for (const f of rest.matchAll(/--(?:from=|mount=[^\s]*?\bfrom=)([^\s,]+)/g)) external(f[1]!);
    }
  }
  return { images: [...images], unresolved };
}

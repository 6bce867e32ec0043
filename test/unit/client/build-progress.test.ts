// A build shows as its steps: one line rewritten in place on a terminal, a line per step elsewhere; the Dockerfile's
// text (the repo's, so a sandbox's) reaches the terminal with its control characters shown, not sent.
import { describe, expect, test } from "bun:test";
import { buildProgress } from "../../../src/client/build-progress";
import { parseBuildStep } from "../../../src/core/build-steps";

const OUTPUT = "Sending build context to Docker daemon  2.048kB\r\nStep 1/3 : FROM sbx-base:bookworm\n ---> 9685abf086ce\nStep 2/3 : RUN apt-get update\n ---> Running in 1\nHit:1 http://deb.debian.org\nStep 3/3 : USER 1000\nSuccessfully built 1\n";

function run(tty: boolean, chunks: string[], columns = 80) {
  const info: string[] = [];
  let raw = "";
  const p = buildProgress({ info: (l) => info.push(l), write: (s) => (raw += s), tty, columns });
  for (const c of chunks) p.progress(c);
  p.log("built image sbx-app:1");
  return { info, raw };
}

describe("build progress", () => {
  test("off a terminal: one line per step, the build's own output left out", () => {
    expect(run(false, [OUTPUT]).info).toEqual([
      "  building the image: step 1/3: FROM sbx-base:bookworm",
      "  building the image: step 2/3: RUN apt-get update",
      "  building the image: step 3/3: USER 1000",
      "built image sbx-app:1",
    ]);
  });

  test("on a terminal: one line rewritten per step, closed before the next note; chunks split anywhere", () => {
    const chunks = OUTPUT.match(/[\s\S]{1,7}/g)!;
    const r = run(true, chunks);
    expect(r.raw).toBe(
      "\r\x1b[Kbuilding the image: step 1/3: FROM sbx-base:bookworm\r\x1b[Kbuilding the image: step 2/3: RUN apt-get update\r\x1b[Kbuilding the image: step 3/3: USER 1000\n",
    );
    expect(r.info).toEqual(["built image sbx-app:1"]);
  });

  test("a long step is cut to the terminal's width", () => {
    const r = run(true, [`Step 1/1 : RUN ${"x".repeat(200)}\n`], 40);
    const line = r.raw.split("\r\x1b[K")[1]!.replace(/\n$/, "");
    expect(line.length).toBe(39);
    expect(line.endsWith("…")).toBe(true);
  });

  test("escape sequences in a step (from the repo's Dockerfile) are shown, never sent", () => {
    const r = run(true, ["Step 1/1 : RUN echo \x1b]0;pwned\x07 \x1b[2J\n"]);
    expect(r.raw).not.toContain("\x1b]0;");
    expect(r.raw).not.toContain("\x1b[2J");
    expect(r.raw.replaceAll("\r\x1b[K", "")).not.toContain("\x1b");
  });
});

describe("parseBuildStep", () => {
  test.each([
    ["Step 3/7 : RUN make", { n: 3, of: 7, text: "RUN make" }],
    ["#8 [2/4] RUN make", { n: 2, of: 4, text: "RUN make" }],
    ["#8 [build 2/4] COPY . .", { n: 2, of: 4, text: "COPY . ." }],
    ["Step 9/7 : nonsense", null],
    ["Step 0/7 : nonsense", null],
    ["make: Step 3/7 : not at the start", null],
  ])("%s", (line, want) => {
    expect(parseBuildStep(line)).toEqual(want);
  });
});

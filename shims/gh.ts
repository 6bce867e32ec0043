// gh shim (runs inside the sandbox on the host's Bun, no dependencies): every gh command goes to the bridge, which holds the token.
import { callBridge } from "./git.ts";

async function main(argv: string[]): Promise<number> {
  let branch: string | undefined;
  try {
    const p = Bun.spawn(["git", "symbolic-ref", "-q", "--short", "HEAD"], { stdout: "pipe", stderr: "ignore", stdin: "ignore" });
    const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
    if (code === 0 && out.trim()) branch = out.trim();
  } catch {}
  const reply = await callBridge({ tool: "gh", args: argv, cwd: process.cwd(), ...(branch ? { branch } : {}) }, undefined, "gh");
  return reply.code;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`sbx gh shim: ${(e as Error).message}\n`);
    process.exit(1);
  },
);

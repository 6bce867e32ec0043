// `sbx help TOPIC`: the guides in docs/help/<topic>.md (the README links the same files), printed as they are.
import { readFileSync } from "node:fs";
import { join } from "node:path";

export const HELP_TOPICS = {
  setup: "install, the daemon, the first sandbox",
  images: "Dockerfile, devcontainer.json, --image, rebuild, --with-changes, an offline base image",
  ports: "reach a sandbox's own server from your machine (sbx port)",
  databases: "databases and caches beside a Docker sandbox: sbx create --service, sbx services",
  "agent-logins": "sbx run claude|codex|gemini|opencode|aider, and the logins sbx adds for them",
  egress: "the allowlist, approvals, what a blocked client sees",
  secrets: "keys and tokens host-side; secrets bound to hosts, their placeholders inside, what is never terminated",
  budget: "an LLM budget per sandbox: sbx create --llm-budget 5usd/day, spend in sbx list, the refusal at the cap, prices",
  sessions: "shell, ps, attach and detach, status, logs",
  editors: "VS Code (sbx code), JetBrains and Zed: what reaches a sandbox, what it brings in, what to do instead",
  dashboard: "sbx ui",
  "chat-setup": "approvals in Zulip, Slack or a signed webhook: sbx chat setup, the listener, the signing scheme",
  "company-network": "a company machine: its proxy as sbx's parent proxy (credentials, NO_PROXY), package mirrors carried into sandboxes",
  troubleshooting: "the likely failures, and what to do",
  uninstall: "remove sandboxes, the service and sbx's files",
} as const;

export type HelpTopic = keyof typeof HELP_TOPICS;

export function isHelpTopic(s: string | undefined): s is HelpTopic {
  return s !== undefined && Object.hasOwn(HELP_TOPICS, s);
}

/** The help epilog's line: every topic. */
export function topicsLine(): string {
  return `Guides: sbx help TOPIC, TOPIC one of ${Object.keys(HELP_TOPICS).join(", ")} (sbx help topics says what each is).`;
}

/** `sbx help topics`: one line each. */
export function topicsList(): string {
  const w = Math.max(...Object.keys(HELP_TOPICS).map((k) => k.length));
  return `${Object.entries(HELP_TOPICS)
    .map(([k, v]) => `  ${k.padEnd(w)}  ${v}`)
    .join("\n")}\n`;
}

/** A topic's text (docs/help/<topic>.md beside the source). */
export function topicText(t: HelpTopic): string {
  return readFileSync(join(import.meta.dir, "..", "..", "docs", "help", `${t}.md`), "utf8");
}

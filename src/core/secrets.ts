// Built-in secret patterns and a scanner that reports file and line: what the push gate refuses to let out.

export interface SecretPattern {
  /** Stable id shown to the user, e.g. `aws-access-key-id`. */
  id: string;
  description: string;
  regex: RegExp;
}

/**
 * Patterns for credentials that have a recognisable shape. Each is anchored on a prefix that real
 * providers issue, so prose, hashes and UUIDs do not match.
 */
export const SECRET_PATTERNS: readonly SecretPattern[] = [
  { id: "aws-access-key-id", description: "AWS access key id", regex: /\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b/ },
  {
    id: "aws-secret-access-key",
    description: "AWS secret access key",
    regex: /aws_?secret_?access_?key["']?\s*[:=]\s*["']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])/i,
  },
  { id: "github-token", description: "GitHub token", regex: /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b/ },
  { id: "github-fine-grained-token", description: "GitHub fine-grained token", regex: /\bgithub_pat_[A-Za-z0-9_]{60,255}\b/ },
  { id: "gitlab-token", description: "GitLab token", regex: /\b(?:glpat|gldt|glrt|glptt|glsoat)-[A-Za-z0-9_-]{20,}\b/ },
  {
    id: "private-key",
    description: "private key block",
    regex: /-----BEGIN (?:RSA |DSA |EC |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----/,
  },
  { id: "anthropic-api-key", description: "Anthropic API key", regex: /\bsk-ant-(?:api|admin|oat|ort)\d{2}-[A-Za-z0-9_-]{20,}/ },
  { id: "openai-api-key", description: "OpenAI API key", regex: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}/ },
  { id: "openai-api-key", description: "OpenAI API key", regex: /\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}/ },
  { id: "google-api-key", description: "Google API key", regex: /\bAIza[0-9A-Za-z_-]{35}\b/ },
  { id: "google-oauth-token", description: "Google OAuth access token", regex: /\bya29\.[0-9A-Za-z_-]{30,}/ },
  { id: "slack-token", description: "Slack token", regex: /\bxox[abposr]-[0-9A-Za-z-]{10,}/ },
  {
    id: "slack-webhook",
    description: "Slack webhook URL",
    regex: /https:\/\/hooks\.slack\.com\/services\/T[0-9A-Z]{6,}\/B[0-9A-Z]{6,}\/[0-9A-Za-z]{20,}/,
  },
  { id: "stripe-key", description: "Stripe secret key", regex: /\b(?:sk|rk)_live_[0-9A-Za-z]{20,}\b/ },
  { id: "npm-token", description: "npm token", regex: /\bnpm_[A-Za-z0-9]{36}\b/ },
  { id: "huggingface-token", description: "Hugging Face token", regex: /\bhf_[A-Za-z]{34}\b/ },
];

export interface SecretFinding {
  file: string;
  line: number;
  pattern: string;
  description: string;
  /** The commit the line was added in, when scanning history. */
  commit?: string;
}

/** Scans one text; line numbers start at 1. */
export function scanText(text: string, file: string, patterns: readonly SecretPattern[] = SECRET_PATTERNS): SecretFinding[] {
  const out: SecretFinding[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const f = scanLine(lines[i]!, patterns);
    if (f) out.push({ file, line: i + 1, pattern: f.id, description: f.description });
  }
  return out;
}

function scanLine(line: string, patterns: readonly SecretPattern[]): SecretPattern | undefined {
  return patterns.find((p) => p.regex.test(line));
}

/**
 * Scans the added lines of a unified diff (as printed by `git log -p --format=commit %H`), reporting
 * the new file's path and line number, and the commit when the diff is a log.
 */
export function scanUnifiedDiff(diff: string, patterns: readonly SecretPattern[] = SECRET_PATTERNS): SecretFinding[] {
  const out: SecretFinding[] = [];
  let commit: string | undefined;
  let file = "";
  let line = 0;
  let inHunk = false;
  for (const raw of diff.split("\n")) {
    const c = /^commit ([0-9a-f]{40,64})$/.exec(raw);
    if (c) {
      commit = c[1];
      inHunk = false;
      continue;
    }
    if (raw.startsWith("diff --git ")) {
      inHunk = false;
      file = "";
      continue;
    }
    if (!inHunk && raw.startsWith("+++ ")) {
      const p = raw.slice(4);
      file = p === "/dev/null" ? "" : unquote(p).replace(/^b\//, "");
      continue;
    }
    const h = /^@@+ (?:-\d+(?:,\d+)? )+\+(\d+)(?:,\d+)? @@/.exec(raw);
    if (h) {
      inHunk = true;
      line = Number(h[1]);
      continue;
    }
    if (!inHunk) continue;
    if (raw.startsWith("+")) {
      const f = scanLine(raw.slice(1), patterns);
      if (f) out.push({ file, line, pattern: f.id, description: f.description, ...(commit ? { commit } : {}) });
      line++;
    } else if (raw.startsWith(" ")) {
      line++;
    } else if (raw.startsWith("-") || raw.startsWith("\\")) {
      // removed lines and "\ No newline" do not advance the new side
    } else {
      inHunk = false;
    }
  }
  return out;
}

/** git quotes paths with unusual bytes as C strings: "b/a\tb". */
function unquote(p: string): string {
  if (!p.startsWith('"')) return p;
  try {
    return JSON.parse(p) as string;
  } catch {
    return p.slice(1, -1);
  }
}

/** One line per finding, for refusals: `path:line: GitHub token (commit abc1234)`. */
export function formatFindings(fs: readonly SecretFinding[]): string {
  return fs
    .map((f) => `${f.file}:${f.line}: ${f.description}${f.commit ? ` (commit ${f.commit.slice(0, 12)})` : ""}`)
    .join("\n");
}

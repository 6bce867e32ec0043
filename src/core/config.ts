// The user's config file (`$XDG_CONFIG_HOME/sbx/config.json`): parsed strictly; a bad file refuses, never falls back to open.
import { z } from "zod";
import { SbxError } from "./errors";
import { scanText } from "./secrets";
import { RESERVED } from "./reserved-env";
export { isReservedEnv } from "./reserved-env";
import { LEVEL_NAMES, type LevelName } from "./levels";
import { parseBudget, PricesSchema } from "./llm-budget";
import { parseParentUrl } from "./parent-proxy";

/** Names that hold credentials by convention; sbx never passes such a variable into a sandbox. */
const SECRET_NAME = /(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH)/i;

/**
 * Why a variable may not go into a sandbox from a file the user did not type (devcontainer.json's containerEnv): its
 * name is sbx's own or a credential's, or its value looks like a secret or is one the host holds. null: it may.
 */
export function envEntryRefusal(name: string, value: string, knownSecrets: readonly string[] = []): string | null {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return "not a valid variable name";
  if (RESERVED.test(name)) return "is set by sbx itself";
  if (SECRET_NAME.test(name)) return "looks like a credential (sbx keeps credentials on the host)";
  if (scanText(value, "config").length > 0) return "its value looks like a secret";
  if (value.length >= 8 && knownSecrets.includes(value)) return "its value is one of your host secrets";
  return null;
}

export const ConfigSchema = z
  .object({
    overlays: z
      .array(z.string().min(1))
      .default([])
      .describe("list of host dirs overlaid copy-on-write in every new sandbox, besides ~/.claude and ~/.config/fish (`~/` is your home; default: none)"),
    /** Variables every new sandbox gets, besides the terminal, locale, proxy and LLM ones sbx sets. */
    env: z
      .record(
        z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "not a valid variable name")
          .refine((k) => !RESERVED.test(k), "is set by sbx itself (proxy, LLM, socket or PATH variables cannot be overridden)")
          .refine((k) => !SECRET_NAME.test(k), "looks like a credential; sbx keeps credentials on the host (use `sbx secret set`)"),
        z.string().refine((v) => scanText(v, "config").length === 0, "looks like a secret (a key or token pattern matched)"),
      )
      .default({})
      .describe("name → value: variables every new sandbox gets, besides the terminal, locale, proxy and LLM ones sbx sets (no credentials; default: none)"),
    detachKeys: z.string().max(64).optional().describe('the keys that leave a `sbx shell` session running (default "ctrl-p,ctrl-q"; "none" turns it off)'),
    limits: z
      .object({
        memory: z.union([z.string(), z.number()]).optional().describe("e.g. \"8g\", \"512m\" or \"none\" (default: half this machine's memory)"),
        cpus: z.union([z.string(), z.number()]).optional().describe("e.g. 2, 0.5 or \"none\" (default: every CPU but one)"),
        pids: z.union([z.string(), z.number()]).optional().describe("processes and threads at once, or \"none\" (default: 4096)"),
      })
      .strict()
      .default({})
      .describe("{memory, cpus, pids}: what each new sandbox may use, unless --memory/--cpus/--pids say otherwise (default: half the memory, every CPU but one, 4096 processes)"),
    transparent: z
      .boolean()
      .optional()
      .describe("true | false: whether new sandboxes get the transparent path (a DNS stub and 80/443 carried to the proxy for clients that ignore the proxy variables; default true; --no-transparent)"),
    policy: z
      .enum(LEVEL_NAMES as [LevelName, ...LevelName[]])
      .optional()
      .describe("locked | balanced | open: the policy level of new sandboxes, unless --policy says otherwise (default: none, the built-in list: api.anthropic.com; `sbx help egress`)"),
    claudeAuth: z
      .enum(["inject", "overlay"])
      .optional()
      .describe("inject | overlay: the default for --claude-auth (default: inject when the host has a Claude key or login)"),
    proxy: z
      .object({
        url: z
          .string()
          .superRefine((u, ctx) => {
            const p = parseParentUrl(u);
            if (!p.ok) ctx.addIssue({ code: "custom", message: p.reason });
            else if (p.endpoint.credentials !== null) ctx.addIssue({ code: "custom", message: "credentials go in a stored secret named by proxy.credentials, never in the config file" });
          }),
        noProxy: z.array(z.string().regex(/^[^\s,]+$/, "one entry each (a name, .domain, an address or address/bits)")).default([]),
        credentials: z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, "the name of a stored secret (sbx secret set NAME) holding user:password").optional(),
      })
      .strict()
      .optional()
      .describe('{url, noProxy, credentials}: the company proxy the daemon goes out through (e.g. {"url": "http://proxy.corp:3128", "noProxy": [".corp"], "credentials": "PROXY_LOGIN"}; default: HTTPS_PROXY/HTTP_PROXY/NO_PROXY of the daemon\'s environment)'),
    trust: z
      .union([z.literal("host"), z.array(z.string().min(1).max(4096)).min(1).max(32)])
      .optional()
      .describe('"host" | ["/path/ca.pem", …]: CAs beyond the system\'s roots that sandboxes and sbx\'s proxy trust (a company CA; "host": the ones `sbx doctor` finds on this machine; default: none)'),
    llmBudget: z
      .string()
      .max(40)
      .optional()
      .describe('the default for --llm-budget: what each new sandbox may spend on model calls, e.g. "5usd/day", "20usd", "2mtokens/day" (default: no budget; spend is counted all the same)'),
    llmPrices: PricesSchema.optional().describe(
      'model → {input, output, cacheRead?, cacheWrite?} in USD per million tokens: added to sbx\'s table of list prices, replacing an entry of the same name (sbx help budget)',
    ),
  })
  .strict();

/** Pure: each key of an object schema with its description, as a hint lists them ("key: what it is"). */
export function describeKeys(schema: z.ZodObject): string[] {
  return Object.entries(schema.shape).map(([k, v]) => `${k}: ${(v as z.ZodType).description ?? "(undocumented)"}`);
}
export type Config = z.infer<typeof ConfigSchema>;

/**
 * Parses config text. `knownSecrets` are values the host holds as secrets (tokens, keys): a config value equal to
 * one is refused too. Throws SbxError(config) naming the file, the key and why.
 */
export function parseConfig(text: string, file: string, knownSecrets: readonly string[] = []): Config {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new SbxError("config", `${file} is not valid JSON: ${(e as Error).message}`, {
      hint: `Fix the file (or move it aside); sbx will not start a sandbox with a config it cannot read.`,
    });
  }
  const r = ConfigSchema.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0]!;
    const where = i.path.length ? i.path.map(String).join(".") : "(top level)";
    // A record key's own reason is nested under zod's generic "Invalid key in record".
    const nested = "issues" in i && Array.isArray(i.issues) ? (i.issues as { message: string }[])[0]?.message : undefined;
    throw new SbxError("config", `${file}: ${where}: ${nested ?? i.message}`, {
      hint: `Allowed keys:\n  ${describeKeys(ConfigSchema).join("\n  ")}`,
    });
  }
  if (r.data.llmBudget !== undefined) {
    try {
      parseBudget(r.data.llmBudget, "llmBudget");
    } catch (e) {
      throw new SbxError("config", `${file}: ${(e as Error).message}`, { hint: (e as SbxError).hint ?? "" });
    }
  }
  for (const [k, v] of Object.entries(r.data.env)) {
    if (v.length >= 8 && knownSecrets.includes(v)) {
      throw new SbxError("config", `${file}: env.${k}: holds the value of one of your host secrets`, {
        hint: "sbx keeps credentials on the host; remove it from the config.",
      });
    }
  }
  return r.data;
}

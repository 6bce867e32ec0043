// What shell completion knows of sbx, read off the commander program: verbs, their options, and what each word takes.
// Pure: the completion scripts are rendered from this (bash.ts, zsh.ts, fish.ts), so a new verb or option needs no edit here.
import type { Command, Option } from "commander";
import { OfferingArgument, type Offer } from "./offers";

/** What an option's value is: none follows it, sandbox names, a directory, a file, one of a list, or anything (nothing offered). */
export type ValueKind = "none" | "sandbox" | "dir" | "file" | "any" | { choices: readonly string[] };

export interface OptionModel {
  /** Its spellings, long first (`--force`, `-f`). */
  flags: string[];
  description: string;
  value: ValueKind;
}

/** What a positional word offers: sandbox names, agents' names, the verbs (`sbx help VERB`), and the argument's choices. */
export interface WordModel {
  offers: readonly (Offer | "verb")[];
  choices: readonly string[];
}

export interface VerbModel {
  /** The verb's name, then its aliases. */
  names: string[];
  description: string;
  options: OptionModel[];
  /** What the n-th positional word offers (0-based); `rest` for every word after those. */
  words: WordModel[];
  rest: WordModel;
  /** sbx's options come only before the first positional word: what follows it is a command's (`shell`, `run`, `exec`). */
  optionsFirst: boolean;
}

export interface CompletionModel {
  /** The program's name (`sbx`): the command the scripts complete and call for names. */
  program: string;
  version: string;
  /** The options before a verb (`--help`, `--version`). */
  options: OptionModel[];
  verbs: VerbModel[];
  agents: readonly string[];
}

/**
 * An option's value, by sbx's conventions: `--sandbox NAME` is a sandbox everywhere, `--repo PATH` a directory, any other
 * `<path>`/`<file>` a file and `<dir>` a directory; commander's choices are offered; any other value gets nothing.
 */
function valueOf(o: Option): ValueKind {
  if (!o.required) return "none"; // a flag, or an optional value (given only as --opt=value)
  if (o.argChoices) return { choices: [...o.argChoices] };
  if (o.long === "--sandbox") return "sandbox";
  if (o.long === "--repo") return "dir";
  const placeholder = /<([^>]+)>/.exec(o.flags)?.[1]?.replace(/\.\.\.$/, "");
  if (placeholder === "path" || placeholder === "file") return "file";
  if (placeholder === "dir") return "dir";
  return "any";
}

function optionsOf(cmd: Command, visible: (c: Command) => readonly Option[]): OptionModel[] {
  return visible(cmd).map((o) => ({
    flags: [o.long, o.short].filter((f): f is string => f !== undefined),
    description: oneLine(o.description),
    value: valueOf(o),
  }));
}

const NOTHING: WordModel = { offers: [], choices: [] };

/** Pure: whether a word offers nothing. */
export const offersNothing = (w: WordModel) => w.offers.length === 0 && w.choices.length === 0;

/** Pure: whether any positional word of the verb offers something (the scripts leave out the verbs that offer none). */
export const offersWords = (v: VerbModel) => !v.words.every(offersNothing) || !offersNothing(v.rest);

const oneLine = (s: string) => s.replace(/\s+/g, " ").trim();

/** Commander's private `_passThroughOptions` (set by `passThroughOptions()`; no getter): a test pins what it reads. */
function passesThrough(cmd: Command): boolean {
  return (cmd as unknown as { _passThroughOptions?: boolean })._passThroughOptions === true;
}

/** Pure: the model of `program` as its help shows it (hidden verbs and options left out; commander's `help` verb in). */
export function completionModel(program: Command, version: string, agents: readonly string[]): CompletionModel {
  const help = program.createHelp();
  const visibleOptions = (c: Command) => help.visibleOptions(c);
  const verbs = help.visibleCommands(program).map((cmd): VerbModel => {
    // Commander's implicit `help [command]` is not among the program's commands: its word is a verb.
    const words: WordModel[] = program.commands.includes(cmd) ? [] : [{ offers: ["verb"], choices: [] }];
    let rest: WordModel = NOTHING;
    for (const a of words.length ? [] : cmd.registeredArguments) {
      const word = { offers: a instanceof OfferingArgument ? a.offers : [], choices: a.argChoices ?? [] };
      if (a.variadic && !(a instanceof OfferingArgument && a.firstOnly)) rest = word;
      else words.push(word);
    }
    return {
      names: [cmd.name(), ...cmd.aliases()],
      description: oneLine(cmd.description()),
      options: optionsOf(cmd, visibleOptions),
      words,
      rest,
      optionsFirst: passesThrough(cmd),
    };
  });
  return { program: program.name(), version, options: optionsOf(program, visibleOptions), verbs, agents };
}

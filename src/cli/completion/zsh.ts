// The zsh completion script `sbx completion zsh` prints. Pure: rendered from the model, golden-tested, run in zsh by tests.
import { shQuote } from "../../core/sh";
import { offersWords, type CompletionModel, type OptionModel, type VerbModel, type WordModel } from "./model";

const q = shQuote;

const pattern = (v: VerbModel) => `(${v.names.map(q).join("|")})`;

/** A `_describe` entry, `word:description` (a colon in the word escaped). */
const described = (word: string, description: string) => q(`${word.replaceAll(":", "\\:")}:${description}`);

const optionSpecs = (options: OptionModel[]) => options.flatMap((o) => o.flags.map((f) => described(f, o.description))).join(" ");

const offersLine = (w: WordModel) => `offers=(${w.offers.join(" ")}); choices=(${w.choices.map(q).join(" ")})`;

function wordCase(v: VerbModel): string {
  if (v.words.length === 0) return `    ${pattern(v)} ${offersLine(v.rest)} ;;`;
  const arms = v.words.map((o, i) => `        (${i}) ${offersLine(o)} ;;`);
  return [`    ${pattern(v)}`, "      case $2 in", ...arms, `        (*) ${offersLine(v.rest)} ;;`, "      esac ;;"].join("\n");
}

function valueCase(name: string, options: OptionModel[]): string[] {
  const arms = options.flatMap((o) => {
    if (o.value === "none") return [];
    const set = typeof o.value === "string" ? `kind=${o.value}` : `kind=choice; choices=(${o.value.choices.map(q).join(" ")})`;
    return [`        (${o.flags.map(q).join("|")}) ${set} ;;`];
  });
  return arms.length === 0 ? [] : [`    ${name}`, "      case $2 in", ...arms, "      esac ;;"];
}

/** Pure: the script, usable both sourced and as an autoloaded `_sbx` on $fpath. */
export function zshScript(m: CompletionModel): string {
  const p = m.program;
  const verbSpecs = m.verbs.flatMap((v) => v.names.map((n) => described(n, v.description))).join(" ");
  return `#compdef ${p}
# ${p} completion for zsh (${p} ${m.version}), printed by \`${p} completion zsh\` from ${p}'s own command table.
# Load it in every shell with this line in ~/.zshrc, after compinit:
#   source <(${p} completion zsh)
# Sandbox names come from the running daemon (\`${p} __complete names\`; none is started). Every word is added with
# compadd or _describe, which quote what they insert.

_${p}_verbs() {
  local -a verbs=(${verbSpecs})
  _describe -t commands '${p} verb' verbs
}

_${p}_options() {
  local -a opts
  case $1 in
    ('') opts=(${optionSpecs(m.options)}) ;;
${m.verbs.filter((v) => v.options.length > 0).map((v) => `    ${pattern(v)} opts=(${optionSpecs(v.options)}) ;;`).join("\n")}
  esac
  _describe -t options 'option' opts
}

# What follows option $2 of verb $1: kind= none, sandbox, dir, file, any (nothing offered) or choice (choices=(…)).
_${p}_value() {
  kind=none
  case $1 in
${[...valueCase("('')", m.options), ...m.verbs.flatMap((v) => valueCase(pattern(v), v.options))].join("\n")}
  esac
}

# What positional word $2 (from 0) of verb $1 offers: offers=(sandbox agent verb …) and its choices=(…).
_${p}_word() {
  case $1 in
${m.verbs.filter(offersWords).map(wordCase).join("\n")}
    (*) offers=(); choices=() ;;
  esac
}

# Whether verb $1 takes its options only before its first word (what follows is a command's own).
_${p}_optsfirst() {
  case $1 in
${m.verbs.some((v) => v.optionsFirst) ? `    (${m.verbs.filter((v) => v.optionsFirst).flatMap((v) => v.names).map(q).join("|")}) return 0 ;;\n` : ""}  esac
  return 1
}

# This repo's (or --repo's) sandbox names, as the running daemon knows them.
_${p}_names() {
  local -a names args=(__complete names)
  [[ -n $repo ]] && args+=(--repo "$repo")
  names=("\${(@f)$(${p} "\${args[@]}" 2>/dev/null)}")
  names=("\${(@)names:#}")
  compadd -- "\${names[@]}"
}

_${p}_value_words() {
  case $kind in
    (sandbox) _${p}_names ;;
    (dir) _files -/ ;;
    (file) _files ;;
    (choice) compadd -- "\${choices[@]}" ;;
  esac
}

_${p}() {
  local cur=\${words[CURRENT]} verb= repo= w kind o
  local -i i=2 n=0
  local -a choices offers
  while (( i < CURRENT )); do
    w=\${words[i]}
    if [[ $w == -- ]]; then
      return 1 # what follows -- is a command's or an agent's own
    elif [[ $w == -?* ]] && { [[ -z $verb ]] || (( n == 0 )) || ! _${p}_optsfirst "$verb"; }; then
      _${p}_value "$verb" "\${w%%=*}"
      if [[ $kind != none && $w != *=* ]]; then
        (( i++ )) # its value is the next word
        if (( i == CURRENT )); then
          _${p}_value_words
          return
        fi
        [[ $w == --repo ]] && repo=\${(Q)words[i]}
      elif [[ $w == --repo=* ]]; then
        repo=\${(Q)w#*=}
      fi
    elif [[ -z $verb ]]; then
      verb=\${(Q)w}
    else
      (( n++ ))
    fi
    (( i++ ))
  done
  [[ $repo == '~/'* ]] && repo=$HOME/\${repo#'~/'}
  if [[ -z $verb ]]; then
    if [[ $cur == -* ]]; then _${p}_options ''; else _${p}_verbs; fi
    return
  fi
  if [[ $cur == -* ]] && { (( n == 0 )) || ! _${p}_optsfirst "$verb"; }; then
    if [[ $cur == --*=* ]]; then
      _${p}_value "$verb" "\${cur%%=*}"
      [[ $kind == none ]] && return 1
      compset -P '*='
      _${p}_value_words
      return
    fi
    _${p}_options "$verb"
    return
  fi
  _${p}_word "$verb" "$n"
  for o in "\${offers[@]}"; do
    case $o in
      (sandbox) _${p}_names ;;
      (agent) compadd -- ${m.agents.map(q).join(" ")} ;;
      (verb) _${p}_verbs ;;
    esac
  done
  (( \${#choices} )) && compadd -- "\${choices[@]}"
  return 0
}

if [[ \${funcstack[1]} == _${p} ]]; then
  _${p} "$@"
else
  compdef _${p} ${p}
fi
`;
}

// The bash completion script `sbx completion bash` prints. Pure: rendered from the model, golden-tested, run in bash by tests.
import { shQuote } from "../../core/sh";
import { offersWords, type CompletionModel, type OptionModel, type VerbModel, type WordModel } from "./model";

const q = shQuote;

/** `case` patterns for a verb's names: `'list'|'ls'`. */
const pattern = (v: VerbModel) => v.names.map(q).join("|");

function offersLine(w: WordModel): string {
  return `offers=(${w.offers.join(" ")}) choices=(${w.choices.map(q).join(" ")})`;
}

function wordCase(v: VerbModel): string {
  if (v.words.length === 0) return `    ${pattern(v)}) ${offersLine(v.rest)} ;;`;
  const arms = v.words.map((o, i) => `        ${i}) ${offersLine(o)} ;;`);
  return [`    ${pattern(v)})`, "      case $2 in", ...arms, `        *) ${offersLine(v.rest)} ;;`, "      esac ;;"].join("\n");
}

function valueArms(options: OptionModel[]): string[] {
  return options.flatMap((o) => {
    if (o.value === "none") return [];
    const set = typeof o.value === "string" ? `kind=${o.value}` : `kind=choice choices=(${o.value.choices.map(q).join(" ")})`;
    return [`        ${o.flags.map(q).join("|")}) ${set} ;;`];
  });
}

function valueCase(name: string, options: OptionModel[]): string[] {
  const arms = valueArms(options);
  return arms.length === 0 ? [] : [`    ${name})`, "      case $2 in", ...arms, "      esac ;;"];
}

const flagsOf = (options: OptionModel[]) => options.flatMap((o) => o.flags).map(q).join(" ");

/** Pure: the script. Names come from `sbx __complete names` at each TAB; everything else is written into it. */
export function bashScript(m: CompletionModel): string {
  const p = m.program;
  return `# ${p} completion for bash (${p} ${m.version}), printed by \`${p} completion bash\` from ${p}'s own command table.
# Load it in every shell with this line in ~/.bashrc:
#   source <(${p} completion bash)
# Sandbox names come from the running daemon (\`${p} __complete names\`; none is started). Every word this script
# inserts is quoted with printf %q, and no word list goes through compgen -W (which would expand it).

# Adds each argument that starts with the word being completed, quoted for the command line.
_${p}_add() {
  local w r
  for w in "$@"; do
    [[ $w == "$cur"* ]] || continue
    printf -v r '%q' "$w"
    COMPREPLY+=("$r")
  done
}

# Files (-f) or directories (-d) that start with the word being completed; bash quotes them (-o filenames).
_${p}_files() {
  local f
  compopt -o filenames 2>/dev/null
  while IFS= read -r f; do COMPREPLY+=("$f"); done < <(compgen "$1" -- "$cur")
}

# This repo's (or --repo's) sandbox names, as the running daemon knows them.
_${p}_names() {
  local -a names args=(__complete names)
  [[ -n $repo ]] && args+=(--repo "$repo")
  mapfile -t names < <(${p} "\${args[@]}" 2>/dev/null)
  _${p}_add "\${names[@]}"
}

_${p}_verbs() {
  _${p}_add ${m.verbs.flatMap((v) => v.names).map(q).join(" ")}
}

_${p}_options() {
  case $1 in
    '') _${p}_add ${flagsOf(m.options)} ;;
${m.verbs.filter((v) => v.options.length > 0).map((v) => `    ${pattern(v)}) _${p}_add ${flagsOf(v.options)} ;;`).join("\n")}
  esac
}

# What follows option $2 of verb $1: kind= none, sandbox, dir, file, any (nothing offered) or choice (choices=(…)).
_${p}_value() {
  kind=none
  case $1 in
${[...valueCase("''", m.options), ...m.verbs.flatMap((v) => valueCase(pattern(v), v.options))].join("\n")}
  esac
}

# What positional word $2 (from 0) of verb $1 offers: offers=(sandbox agent verb …) and its choices=(…).
_${p}_word() {
  case $1 in
${m.verbs.filter(offersWords).map(wordCase).join("\n")}
    *) offers=() choices=() ;;
  esac
}

# Whether verb $1 takes its options only before its first word (what follows is a command's own).
_${p}_optsfirst() {
  case $1 in
${m.verbs.some((v) => v.optionsFirst) ? `    ${m.verbs.filter((v) => v.optionsFirst).map(pattern).join("|")}) return 0 ;;\n` : ""}  esac
  return 1
}

_${p}_value_words() {
  case $kind in
    sandbox) _${p}_names ;;
    dir) _${p}_files -d ;;
    file) _${p}_files -f ;;
    choice) _${p}_add "\${choices[@]}" ;;
  esac
}

_${p}() {
  local cur=\${COMP_WORDS[COMP_CWORD]} verb= repo= w kind o i=1 n=0
  local -a choices offers
  COMPREPLY=()
  while (( i < COMP_CWORD )); do
    w=\${COMP_WORDS[i]}
    if [[ $w == -- ]]; then
      return 0 # what follows -- is a command's or an agent's own
    elif [[ $w == -?* ]] && { [[ -z $verb ]] || (( n == 0 )) || ! _${p}_optsfirst "$verb"; }; then
      _${p}_value "$verb" "\${w%%=*}"
      if [[ $kind != none && $w != *=* ]]; then
        # Its value is the next word (bash splits --repo=DIR into --repo, =, DIR).
        [[ \${COMP_WORDS[i+1]} == = ]] && (( i++ ))
        (( i++ ))
        if (( i >= COMP_CWORD )); then
          (( i > COMP_CWORD )) && cur= # the cursor is right after the =
          _${p}_value_words
          return 0
        fi
        [[ $w == --repo ]] && repo=\${COMP_WORDS[i]}
      elif [[ $w == --repo=* ]]; then
        repo=\${w#*=}
      fi
    elif [[ -z $verb ]]; then
      verb=$w
    else
      (( n++ ))
    fi
    (( i++ ))
  done
  [[ $repo == '~/'* ]] && repo=$HOME/\${repo#'~/'}
  if [[ -z $verb ]]; then
    if [[ $cur == -* ]]; then _${p}_options ''; else _${p}_verbs; fi
    return 0
  fi
  if [[ $cur == -* ]] && { (( n == 0 )) || ! _${p}_optsfirst "$verb"; }; then
    _${p}_options "$verb"
    return 0
  fi
  _${p}_word "$verb" "$n"
  for o in "\${offers[@]}"; do
    case $o in
      sandbox) _${p}_names ;;
      agent) _${p}_add ${m.agents.map(q).join(" ")} ;;
      verb) _${p}_verbs ;;
    esac
  done
  _${p}_add "\${choices[@]}"
  return 0
}

complete -F _${p} ${p}
`;
}

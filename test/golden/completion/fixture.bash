# sbx completion for bash (sbx 9.9.9), printed by `sbx completion bash` from sbx's own command table.
# Load it in every shell with this line in ~/.bashrc:
#   source <(sbx completion bash)
# Sandbox names come from the running daemon (`sbx __complete names`; none is started). Every word this script
# inserts is quoted with printf %q, and no word list goes through compgen -W (which would expand it).

# Adds each argument that starts with the word being completed, quoted for the command line.
_sbx_add() {
  local w r
  for w in "$@"; do
    [[ $w == "$cur"* ]] || continue
    printf -v r '%q' "$w"
    COMPREPLY+=("$r")
  done
}

# Files (-f) or directories (-d) that start with the word being completed; bash quotes them (-o filenames).
_sbx_files() {
  local f
  compopt -o filenames 2>/dev/null
  while IFS= read -r f; do COMPREPLY+=("$f"); done < <(compgen "$1" -- "$cur")
}

# This repo's (or --repo's) sandbox names, as the running daemon knows them.
_sbx_names() {
  local -a names args=(__complete names)
  [[ -n $repo ]] && args+=(--repo "$repo")
  mapfile -t names < <(sbx "${args[@]}" 2>/dev/null)
  _sbx_add "${names[@]}"
}

_sbx_verbs() {
  _sbx_add 'open' 'o' 'run' 'say' 'help'
}

_sbx_options() {
  case $1 in
    '') _sbx_add '--version' '-V' '--help' '-h' ;;
    'open'|'o') _sbx_add '--repo' '--sandbox' '--key-file' '--force' '-f' '--mode' '--help' '-h' ;;
    'run') _sbx_add '--since' '--help' '-h' ;;
    'say') _sbx_add '--help' '-h' ;;
  esac
}

# What follows option $2 of verb $1: kind= none, sandbox, dir, file, any (nothing offered) or choice (choices=(…)).
_sbx_value() {
  kind=none
  case $1 in
    'open'|'o')
      case $2 in
        '--repo') kind=dir ;;
        '--sandbox') kind=sandbox ;;
        '--key-file') kind=file ;;
        '--mode') kind=choice choices=('up' 'down') ;;
      esac ;;
    'run')
      case $2 in
        '--since') kind=any ;;
      esac ;;
  esac
}

# What positional word $2 (from 0) of verb $1 offers: offers=(sandbox agent verb …) and its choices=(…).
_sbx_word() {
  case $1 in
    'open'|'o') offers=(sandbox) choices=() ;;
    'run')
      case $2 in
        0) offers=(agent sandbox) choices=() ;;
        1) offers=(sandbox) choices=() ;;
        *) offers=() choices=() ;;
      esac ;;
    'help')
      case $2 in
        0) offers=(verb) choices=() ;;
        *) offers=() choices=() ;;
      esac ;;
    *) offers=() choices=() ;;
  esac
}

# Whether verb $1 takes its options only before its first word (what follows is a command's own).
_sbx_optsfirst() {
  case $1 in
    'run') return 0 ;;
  esac
  return 1
}

_sbx_value_words() {
  case $kind in
    sandbox) _sbx_names ;;
    dir) _sbx_files -d ;;
    file) _sbx_files -f ;;
    choice) _sbx_add "${choices[@]}" ;;
  esac
}

_sbx() {
  local cur=${COMP_WORDS[COMP_CWORD]} verb= repo= w kind o i=1 n=0
  local -a choices offers
  COMPREPLY=()
  while (( i < COMP_CWORD )); do
    w=${COMP_WORDS[i]}
    if [[ $w == -- ]]; then
      return 0 # what follows -- is a command's or an agent's own
    elif [[ $w == -?* ]] && { [[ -z $verb ]] || (( n == 0 )) || ! _sbx_optsfirst "$verb"; }; then
      _sbx_value "$verb" "${w%%=*}"
      if [[ $kind != none && $w != *=* ]]; then
        # Its value is the next word (bash splits --repo=DIR into --repo, =, DIR).
        [[ ${COMP_WORDS[i+1]} == = ]] && (( i++ ))
        (( i++ ))
        if (( i >= COMP_CWORD )); then
          (( i > COMP_CWORD )) && cur= # the cursor is right after the =
          _sbx_value_words
          return 0
        fi
        [[ $w == --repo ]] && repo=${COMP_WORDS[i]}
      elif [[ $w == --repo=* ]]; then
        repo=${w#*=}
      fi
    elif [[ -z $verb ]]; then
      verb=$w
    else
      (( n++ ))
    fi
    (( i++ ))
  done
  [[ $repo == '~/'* ]] && repo=$HOME/${repo#'~/'}
  if [[ -z $verb ]]; then
    if [[ $cur == -* ]]; then _sbx_options ''; else _sbx_verbs; fi
    return 0
  fi
  if [[ $cur == -* ]] && { (( n == 0 )) || ! _sbx_optsfirst "$verb"; }; then
    _sbx_options "$verb"
    return 0
  fi
  _sbx_word "$verb" "$n"
  for o in "${offers[@]}"; do
    case $o in
      sandbox) _sbx_names ;;
      agent) _sbx_add 'claude' 'codex' ;;
      verb) _sbx_verbs ;;
    esac
  done
  _sbx_add "${choices[@]}"
  return 0
}

complete -F _sbx sbx

#compdef sbx
# sbx completion for zsh (sbx 9.9.9), printed by `sbx completion zsh` from sbx's own command table.
# Load it in every shell with this line in ~/.zshrc, after compinit:
#   source <(sbx completion zsh)
# Sandbox names come from the running daemon (`sbx __complete names`; none is started). Every word is added with
# compadd or _describe, which quote what they insert.

_sbx_verbs() {
  local -a verbs=('open:open a sandbox' 'o:open a sandbox' 'run:run an agent or a command' 'say:it'\''s: a '\''quoted'\'' \ description' 'help:display help for command')
  _describe -t commands 'sbx verb' verbs
}

_sbx_options() {
  local -a opts
  case $1 in
    ('') opts=('--version:print the version' '-V:print the version' '--help:show help' '-h:show help') ;;
    ('open'|'o') opts=('--repo:the repo' '--sandbox:a sandbox' '--key-file:a file' '--force:without asking' '-f:without asking' '--mode:which way' '--help:show help' '-h:show help') ;;
    ('run') opts=('--since:from when' '--help:show help' '-h:show help') ;;
    ('say') opts=('--help:show help' '-h:show help') ;;
  esac
  _describe -t options 'option' opts
}

# What follows option $2 of verb $1: kind= none, sandbox, dir, file, any (nothing offered) or choice (choices=(…)).
_sbx_value() {
  kind=none
  case $1 in
    ('open'|'o')
      case $2 in
        ('--repo') kind=dir ;;
        ('--sandbox') kind=sandbox ;;
        ('--key-file') kind=file ;;
        ('--mode') kind=choice; choices=('up' 'down') ;;
      esac ;;
    ('run')
      case $2 in
        ('--since') kind=any ;;
      esac ;;
  esac
}

# What positional word $2 (from 0) of verb $1 offers: offers=(sandbox agent verb …) and its choices=(…).
_sbx_word() {
  case $1 in
    ('open'|'o') offers=(sandbox); choices=() ;;
    ('run')
      case $2 in
        (0) offers=(agent sandbox); choices=() ;;
        (1) offers=(sandbox); choices=() ;;
        (*) offers=(); choices=() ;;
      esac ;;
    ('help')
      case $2 in
        (0) offers=(verb); choices=() ;;
        (*) offers=(); choices=() ;;
      esac ;;
    (*) offers=(); choices=() ;;
  esac
}

# Whether verb $1 takes its options only before its first word (what follows is a command's own).
_sbx_optsfirst() {
  case $1 in
    ('run') return 0 ;;
  esac
  return 1
}

# This repo's (or --repo's) sandbox names, as the running daemon knows them.
_sbx_names() {
  local -a names args=(__complete names)
  [[ -n $repo ]] && args+=(--repo "$repo")
  names=("${(@f)$(sbx "${args[@]}" 2>/dev/null)}")
  names=("${(@)names:#}")
  compadd -- "${names[@]}"
}

_sbx_value_words() {
  case $kind in
    (sandbox) _sbx_names ;;
    (dir) _files -/ ;;
    (file) _files ;;
    (choice) compadd -- "${choices[@]}" ;;
  esac
}

_sbx() {
  local cur=${words[CURRENT]} verb= repo= w kind o
  local -i i=2 n=0
  local -a choices offers
  while (( i < CURRENT )); do
    w=${words[i]}
    if [[ $w == -- ]]; then
      return 1 # what follows -- is a command's or an agent's own
    elif [[ $w == -?* ]] && { [[ -z $verb ]] || (( n == 0 )) || ! _sbx_optsfirst "$verb"; }; then
      _sbx_value "$verb" "${w%%=*}"
      if [[ $kind != none && $w != *=* ]]; then
        (( i++ )) # its value is the next word
        if (( i == CURRENT )); then
          _sbx_value_words
          return
        fi
        [[ $w == --repo ]] && repo=${(Q)words[i]}
      elif [[ $w == --repo=* ]]; then
        repo=${(Q)w#*=}
      fi
    elif [[ -z $verb ]]; then
      verb=${(Q)w}
    else
      (( n++ ))
    fi
    (( i++ ))
  done
  [[ $repo == '~/'* ]] && repo=$HOME/${repo#'~/'}
  if [[ -z $verb ]]; then
    if [[ $cur == -* ]]; then _sbx_options ''; else _sbx_verbs; fi
    return
  fi
  if [[ $cur == -* ]] && { (( n == 0 )) || ! _sbx_optsfirst "$verb"; }; then
    if [[ $cur == --*=* ]]; then
      _sbx_value "$verb" "${cur%%=*}"
      [[ $kind == none ]] && return 1
      compset -P '*='
      _sbx_value_words
      return
    fi
    _sbx_options "$verb"
    return
  fi
  _sbx_word "$verb" "$n"
  for o in "${offers[@]}"; do
    case $o in
      (sandbox) _sbx_names ;;
      (agent) compadd -- 'claude' 'codex' ;;
      (verb) _sbx_verbs ;;
    esac
  done
  (( ${#choices} )) && compadd -- "${choices[@]}"
  return 0
}

if [[ ${funcstack[1]} == _sbx ]]; then
  _sbx "$@"
else
  compdef _sbx sbx
fi

# sbx completion for fish (sbx 9.9.9), printed by `sbx completion fish` from sbx's own command table.
# Load it in every shell with this line in ~/.config/fish/config.fish:
#   sbx completion fish | source
# Sandbox names come from the running daemon (`sbx __complete names`; none is started). fish escapes every word it
# inserts; the candidates are printed, never evaluated.

function __sbx_verbs
    printf '%s\t%s\n' 'open' 'open a sandbox' 'o' 'open a sandbox' 'run' 'run an agent or a command' 'say' 'it\'s: a \'quoted\' \\ description' 'help' 'display help for command'
end

function __sbx_options --argument-names verb
    switch "$verb"
        case ''
            printf '%s\t%s\n' '--version' 'print the version' '-V' 'print the version' '--help' 'show help' '-h' 'show help'
        case 'open' 'o'
            printf '%s\t%s\n' '--repo' 'the repo' '--sandbox' 'a sandbox' '--key-file' 'a file' '--force' 'without asking' '-f' 'without asking' '--mode' 'which way' '--help' 'show help' '-h' 'show help'
        case 'run'
            printf '%s\t%s\n' '--since' 'from when' '--help' 'show help' '-h' 'show help'
        case 'say'
            printf '%s\t%s\n' '--help' 'show help' '-h' 'show help'
    end
end

# What follows option $opt of $verb: none, sandbox, dir, file, any (nothing offered), or choice then the choices.
function __sbx_value --argument-names verb opt
    switch "$verb"
        case 'open' 'o'
            switch $opt
                case '--repo'
                    echo dir
                    return
                case '--sandbox'
                    echo sandbox
                    return
                case '--key-file'
                    echo file
                    return
                case '--mode'
                    printf '%s\n' choice 'up' 'down'
                    return
            end
        case 'run'
            switch $opt
                case '--since'
                    echo any
                    return
            end
    end
    echo none
end

# What positional word $n (from 0) of $verb offers: sandbox, agent, verb, choice:WORD.
function __sbx_word --argument-names verb n
    switch "$verb"
        case 'open' 'o'
            printf '%s\n' 'sandbox'
        case 'run'
            switch $n
                case 0
                    printf '%s\n' 'agent' 'sandbox'
                case 1
                    printf '%s\n' 'sandbox'
                case '*'
                    true
            end
        case 'help'
            switch $n
                case 0
                    printf '%s\n' 'verb'
                case '*'
                    true
            end
    end
end

# Whether $verb takes its options only before its first word (what follows is a command's own).
function __sbx_optsfirst --argument-names verb
    contains -- "$verb" 'run'
end

# This repo's (or --repo's) sandbox names, as the running daemon knows them. fish escapes what it inserts but a leading
# ~, which it would expand: such a word (never a valid name) is not offered.
function __sbx_names --argument-names repo
    set -l args __complete names
    test -n "$repo"; and set -a args --repo "$repo"
    sbx $args 2>/dev/null | string match -v -- '~*'
end

# The words for an option's value; $prefix is put before each (--repo=DIR typed as one word).
function __sbx_value_words --argument-names prefix repo cur kind
    switch "$kind"
        case sandbox
            for w in (__sbx_names "$repo")
                printf '%s%s\n' "$prefix" "$w"
            end
        case dir
            __fish_complete_directories "$cur" | string replace -r -- '^' "$prefix"
        case file
            __fish_complete_path "$cur" | string replace -r -- '^' "$prefix"
        case choice
            for w in $argv[5..-1]
                printf '%s%s\n' "$prefix" "$w"
            end
    end
end

function __sbx_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -l verb ''
    set -l repo ''
    set -l n 0
    set -l i 2
    set -l last (count $tokens)
    while test $i -le $last
        set -l w $tokens[$i]
        if test "$w" = --
            return 0 # what follows -- is a command's or an agent's own
        else if string match -q -- '-?*' "$w"; and begin; test -z "$verb"; or test $n -eq 0; or not __sbx_optsfirst "$verb"; end
            set -l opt (string split -m 1 -- = "$w")[1]
            set -l kind (__sbx_value "$verb" "$opt")
            if test "$kind[1]" != none; and not string match -q -- '*=*' "$w"
                set i (math $i + 1) # its value is the next word
                if test $i -gt $last
                    __sbx_value_words '' "$repo" "$cur" $kind
                    return 0
                end
                test "$opt" = --repo; and set repo $tokens[$i]
            else if string match -q -- '--repo=*' "$w"
                set repo (string replace -- '--repo=' '' "$w")
            end
        else if test -z "$verb"
            set verb $w
        else
            set n (math $n + 1)
        end
        set i (math $i + 1)
    end
    string match -q -- '~/*' "$repo"; and set repo $HOME/(string sub -s 3 -- "$repo")
    if test -z "$verb"
        if string match -q -- '-*' "$cur"
            __sbx_options ''
        else
            __sbx_verbs
        end
        return 0
    end
    if string match -q -- '-*' "$cur"; and begin; test $n -eq 0; or not __sbx_optsfirst "$verb"; end
        if string match -q -- '--*=*' "$cur"
            set -l opt (string split -m 1 -- = "$cur")
            set -l kind (__sbx_value "$verb" "$opt[1]")
            test "$kind[1]" = none; and return 0
            __sbx_value_words "$opt[1]=" "$repo" "$opt[2]" $kind
            return 0
        end
        __sbx_options "$verb"
        return 0
    end
    for o in (__sbx_word "$verb" $n)
        switch $o
            case sandbox
                __sbx_names "$repo"
            case agent
                printf '%s\n' 'claude' 'codex'
            case verb
                __sbx_verbs
            case 'choice:*'
                string sub -s 8 -- "$o"
        end
    end
end

complete -c sbx -f -a '(__sbx_complete)'

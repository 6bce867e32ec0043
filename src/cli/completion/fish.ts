// The fish completion script `sbx completion fish` prints. Pure: rendered from the model, golden-tested, run in fish by tests.
import { offersWords, type CompletionModel, type OptionModel, type VerbModel, type WordModel } from "./model";

/** fish single-quoting: inside '…' only \\ and \' are escapes. */
export function fishQuote(s: string): string {
  return `'${s.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
}

const q = fishQuote;

const caseOf = (v: VerbModel) => `case ${v.names.map(q).join(" ")}`;

/** `printf '%s\t%s\n' word description …`: fish shows the description beside the word. */
const described = (pairs: [string, string][]) => `printf '%s\\t%s\\n' ${pairs.map(([w, d]) => `${q(w)} ${q(d)}`).join(" ")}`;

const optionPairs = (options: OptionModel[]): [string, string][] => options.flatMap((o) => o.flags.map((f): [string, string] => [f, o.description]));

/** One word per line: what it offers (sandbox, agent, verb), then `choice:WORD` for each of its choices. */
const offersLine = (w: WordModel) => {
  const all = [...w.offers.map(q), ...w.choices.map((c) => q(`choice:${c}`))];
  return all.length ? `printf '%s\\n' ${all.join(" ")}` : "true";
};

function wordSwitch(v: VerbModel): string[] {
  if (v.words.length === 0) return [`        ${caseOf(v)}`, `            ${offersLine(v.rest)}`];
  return [
    `        ${caseOf(v)}`,
    "            switch $n",
    ...v.words.flatMap((o, i) => [`                case ${i}`, `                    ${offersLine(o)}`]),
    "                case '*'",
    `                    ${offersLine(v.rest)}`,
    "            end",
  ];
}

function valueSwitch(caseLine: string, options: OptionModel[]): string[] {
  const arms = options.flatMap((o) => {
    if (o.value === "none") return [];
    const out = typeof o.value === "string" ? `echo ${o.value}` : `printf '%s\\n' choice ${o.value.choices.map(q).join(" ")}`;
    return [`                case ${o.flags.map(q).join(" ")}`, `                    ${out}`, "                    return"];
  });
  return arms.length === 0 ? [] : [`        ${caseLine}`, "            switch $opt", ...arms, "            end"];
}

/** Pure: the script. fish escapes what it inserts; the names are words fish never evaluates. */
export function fishScript(m: CompletionModel): string {
  const p = m.program;
  const optsFirst = m.verbs.filter((v) => v.optionsFirst).flatMap((v) => v.names);
  return `# ${p} completion for fish (${p} ${m.version}), printed by \`${p} completion fish\` from ${p}'s own command table.
# Load it in every shell with this line in ~/.config/fish/config.fish:
#   ${p} completion fish | source
# Sandbox names come from the running daemon (\`${p} __complete names\`; none is started). fish escapes every word it
# inserts; the candidates are printed, never evaluated.

function __${p}_verbs
    ${described(m.verbs.flatMap((v) => v.names.map((n): [string, string] => [n, v.description])))}
end

function __${p}_options --argument-names verb
    switch "$verb"
        case ''
            ${described(optionPairs(m.options))}
${m.verbs.filter((v) => v.options.length > 0).flatMap((v) => [`        ${caseOf(v)}`, `            ${described(optionPairs(v.options))}`]).join("\n")}
    end
end

# What follows option $opt of $verb: none, sandbox, dir, file, any (nothing offered), or choice then the choices.
function __${p}_value --argument-names verb opt
    switch "$verb"
${[...valueSwitch("case ''", m.options), ...m.verbs.flatMap((v) => valueSwitch(caseOf(v), v.options))].join("\n")}
    end
    echo none
end

# What positional word $n (from 0) of $verb offers: sandbox, agent, verb, choice:WORD.
function __${p}_word --argument-names verb n
    switch "$verb"
${m.verbs.filter(offersWords).flatMap(wordSwitch).join("\n")}
    end
end

# Whether $verb takes its options only before its first word (what follows is a command's own).
function __${p}_optsfirst --argument-names verb
    ${optsFirst.length ? `contains -- "$verb" ${optsFirst.map(q).join(" ")}` : "false"}
end

# This repo's (or --repo's) sandbox names, as the running daemon knows them. fish escapes what it inserts but a leading
# ~, which it would expand: such a word (never a valid name) is not offered.
function __${p}_names --argument-names repo
    set -l args __complete names
    test -n "$repo"; and set -a args --repo "$repo"
    ${p} $args 2>/dev/null | string match -v -- '~*'
end

# The words for an option's value; $prefix is put before each (--repo=DIR typed as one word).
function __${p}_value_words --argument-names prefix repo cur kind
    switch "$kind"
        case sandbox
            for w in (__${p}_names "$repo")
                printf '%s%s\\n' "$prefix" "$w"
            end
        case dir
            __fish_complete_directories "$cur" | string replace -r -- '^' "$prefix"
        case file
            __fish_complete_path "$cur" | string replace -r -- '^' "$prefix"
        case choice
            for w in $argv[5..-1]
                printf '%s%s\\n' "$prefix" "$w"
            end
    end
end

function __${p}_complete
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
        else if string match -q -- '-?*' "$w"; and begin; test -z "$verb"; or test $n -eq 0; or not __${p}_optsfirst "$verb"; end
            set -l opt (string split -m 1 -- = "$w")[1]
            set -l kind (__${p}_value "$verb" "$opt")
            if test "$kind[1]" != none; and not string match -q -- '*=*' "$w"
                set i (math $i + 1) # its value is the next word
                if test $i -gt $last
                    __${p}_value_words '' "$repo" "$cur" $kind
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
            __${p}_options ''
        else
            __${p}_verbs
        end
        return 0
    end
    if string match -q -- '-*' "$cur"; and begin; test $n -eq 0; or not __${p}_optsfirst "$verb"; end
        if string match -q -- '--*=*' "$cur"
            set -l opt (string split -m 1 -- = "$cur")
            set -l kind (__${p}_value "$verb" "$opt[1]")
            test "$kind[1]" = none; and return 0
            __${p}_value_words "$opt[1]=" "$repo" "$opt[2]" $kind
            return 0
        end
        __${p}_options "$verb"
        return 0
    end
    for o in (__${p}_word "$verb" $n)
        switch $o
            case sandbox
                __${p}_names "$repo"
            case agent
                printf '%s\\n' ${m.agents.map(q).join(" ")}
            case verb
                __${p}_verbs
            case 'choice:*'
                string sub -s 8 -- "$o"
        end
    end
end

complete -c ${p} -f -a '(__${p}_complete)'
`;
}

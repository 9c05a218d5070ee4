package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// commandFlags lists each command's flags, for the completion scripts.
var commandFlags = map[string][]string{
	"agents":     {"-json", "-wait"},
	"tail":       {"-class", "-thread", "-run", "-n", "-json"},
	"chat":       {"-wait", "-json", "-thread"},
	"run list":   {"-class", "-thread", "-state", "-limit", "-json"},
	"run show":   {"-class", "-json", "-wait"},
	"run cancel": {"-class", "-reason", "-wait"},
	"run graph":  {"-format", "-wait"},
	"replay":     {"-class", "-pkg", "-test", "-save"},
	"completion": nil,
	"version":    nil,
	"help":       nil,
}

var (
	topCommands = []string{"agents", "tail", "chat", "run", "replay", "completion", "version", "help"}
	runCommands = []string{"list", "show", "cancel", "graph"}
	shells      = []string{"bash", "zsh", "fish"}
)

func cmdCompletion(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "completion", "completion bash|zsh|fish", `  source <(saap completion bash)                 # bash, now; add it to ~/.bashrc to keep it
  saap completion zsh > "${fpath[1]}/_saap"       # zsh, then start a new shell
  saap completion fish > ~/.config/fish/completions/saap.fish
`)
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: want one shell: bash, zsh or fish", errUsage)
	}
	switch fs.Arg(0) {
	case "bash":
		fmt.Fprint(e.stdout, bashCompletion())
	case "zsh":
		fmt.Fprint(e.stdout, zshCompletion())
	case "fish":
		fmt.Fprint(e.stdout, fishCompletion())
	default:
		return fmt.Errorf("%w: no completion for shell %q: want bash, zsh or fish", errUsage, fs.Arg(0))
	}
	return nil
}

func sortedCommands() []string {
	var out []string
	for c := range commandFlags {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func bashCompletion() string {
	var b strings.Builder
	b.WriteString(`# bash completion for saap: source <(saap completion bash)
_saap() {
    local cur=${COMP_WORDS[COMP_CWORD]} cmd="" sub="" i w
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        case $w in
        -nats) ((i++)) ;;
        -*) ;;
        *) if [[ -z $cmd ]]; then cmd=$w; elif [[ $cmd == run && -z $sub ]]; then sub=$w; fi ;;
        esac
    done
    local words
    case "$cmd $sub" in
`)
	fmt.Fprintf(&b, "    \" \") words=%q ;;\n", "-nats -version -h "+strings.Join(topCommands, " "))
	fmt.Fprintf(&b, "    \"run \") words=%q ;;\n", strings.Join(runCommands, " "))
	fmt.Fprintf(&b, "    \"completion \") words=%q ;;\n", strings.Join(shells, " "))
	fmt.Fprintf(&b, "    \"help \") words=%q ;;\n", strings.Join(topCommands[:len(topCommands)-1], " "))
	for _, c := range sortedCommands() {
		if fl := commandFlags[c]; len(fl) > 0 {
			key := c + " "
			if strings.HasPrefix(c, "run ") {
				key = c
			}
			fmt.Fprintf(&b, "    %q) words=%q ;;\n", key, strings.Join(append(fl, "-h"), " "))
		}
	}
	b.WriteString(`    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _saap saap
`)
	return b.String()
}

func zshCompletion() string {
	var b strings.Builder
	b.WriteString(`#compdef saap
# zsh completion for saap: saap completion zsh > "${fpath[1]}/_saap"
_saap() {
    local -a words_
    local cmd="" sub="" i
    for ((i = 2; i < CURRENT; i++)); do
        case ${words[i]} in
        -nats) ((i++)) ;;
        -*) ;;
        *) if [[ -z $cmd ]]; then cmd=${words[i]}; elif [[ $cmd == run && -z $sub ]]; then sub=${words[i]}; fi ;;
        esac
    done
    case "$cmd $sub" in
`)
	fmt.Fprintf(&b, "    \" \") words_=(%s) ;;\n", "-nats -version -h "+strings.Join(topCommands, " "))
	fmt.Fprintf(&b, "    \"run \") words_=(%s) ;;\n", strings.Join(runCommands, " "))
	fmt.Fprintf(&b, "    \"completion \") words_=(%s) ;;\n", strings.Join(shells, " "))
	fmt.Fprintf(&b, "    \"help \") words_=(%s) ;;\n", strings.Join(topCommands[:len(topCommands)-1], " "))
	for _, c := range sortedCommands() {
		if fl := commandFlags[c]; len(fl) > 0 {
			key := c + " "
			if strings.HasPrefix(c, "run ") {
				key = c
			}
			fmt.Fprintf(&b, "    %q) words_=(%s) ;;\n", key, strings.Join(append(fl, "-h"), " "))
		}
	}
	b.WriteString(`    esac
    compadd -- $words_
    _files
}
compdef _saap saap
`)
	return b.String()
}

func fishCompletion() string {
	var b strings.Builder
	b.WriteString("# fish completion for saap: saap completion fish | source\n")
	b.WriteString("complete -c saap -f\n")
	fmt.Fprintf(&b, "complete -c saap -n __fish_use_subcommand -a %q\n", strings.Join(topCommands, " "))
	b.WriteString("complete -c saap -n __fish_use_subcommand -o nats -r -d 'NATS server URL'\n")
	b.WriteString("complete -c saap -n __fish_use_subcommand -o version -d 'print the version'\n")
	fmt.Fprintf(&b, "complete -c saap -n '__fish_seen_subcommand_from run; and not __fish_seen_subcommand_from %s' -a %q\n",
		strings.Join(runCommands, " "), strings.Join(runCommands, " "))
	fmt.Fprintf(&b, "complete -c saap -n '__fish_seen_subcommand_from completion' -a %q\n", strings.Join(shells, " "))
	fmt.Fprintf(&b, "complete -c saap -n '__fish_seen_subcommand_from help' -a %q\n", strings.Join(topCommands[:len(topCommands)-1], " "))
	for _, c := range sortedCommands() {
		cond := "__fish_seen_subcommand_from " + c
		if sub, ok := strings.CutPrefix(c, "run "); ok {
			cond = "__fish_seen_subcommand_from run; and __fish_seen_subcommand_from " + sub
		}
		for _, f := range commandFlags[c] {
			fmt.Fprintf(&b, "complete -c saap -n '%s' -o %s\n", cond, strings.TrimPrefix(f, "-"))
		}
	}
	return b.String()
}

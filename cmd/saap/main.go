// Command saap is the developer's command line for agents of the Swiss AI
// Agent Protocol: it lists the agent classes on a NATS server, follows
// their events live, chats with an agent in the terminal, shows a run's
// timeline and draws a workflow's graph.
//
// Install it with
//
//	go install github.com/saap-go/agent/cmd/saap@latest
//
// It talks to the NATS server named by NATS_URL (with NATS_TOKEN,
// NATS_CREDS and the other NATS_* variables), or by -nats; dev mode
// (package dev) prints the URL of its server at start.
//
//	saap agents [-json]                      the classes discovery finds
//	saap tail [-class C] [-thread T] [-run R] [-json]  live events, one line each
//	saap chat [-json] CLASS[/instance] [text]  a conversation in the terminal
//	saap run list [-class C] [-thread T] [-state S] [-json]  runs and their status
//	saap run show [-class C] [-json] RUN     a run's timeline from the stream
//	saap run cancel [-class C] [-reason R] RUN  stop a run
//	saap run graph [-format mermaid|dot] CLASS  the workflow graph
//	saap replay RUN -pkg ./path/to/agent     the run replayed against the current code
//	saap completion bash|zsh|fish            a shell completion script
//	saap version                             the command's version
//
// Help (saap help, saap -h, saap COMMAND -h) goes to standard output;
// usage errors go to standard error.
//
// Exit status: 0 on success, 1 when the command failed, 2 for a usage
// error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/saap-go/agent/bus/natsbus"
)

const usage = `saap: developer tools for Swiss AI Agent Protocol agents

Usage:
  saap [-nats URL] COMMAND [flags] [args]
  saap --version

Commands:
  agents      list the agent classes that answer discovery
  tail        print live events, one line each
  chat        talk to an agent in the terminal
  run list    list a class's runs and their status
  run show    print a run's timeline from its stream
  run cancel  stop a run: its steps are cancelled, its compensations run
  run graph   print an agent class's workflow as Mermaid or DOT
  replay      replay a recorded run against the current code (go test)
  completion  print a shell completion script (bash, zsh, fish)
  version     print the command's version
  help        print this help, or a command's: saap help COMMAND

Examples:
  export NATS_URL=nats://127.0.0.1:4222    # or the URL dev mode printed
  saap agents
  saap tail -class EchoAgent
  saap chat EchoAgent "Hello"
  saap chat EchoAgent/support               # interactive; Ctrl-D ends
  saap run list -class EchoAgent -state waiting
  saap run show 0123456789abcdef01234567
  saap run show -json RUN > run.json        # a recording agenttest.Replay reads
  saap run cancel -reason "wrong question" 0123456789abcdef01234567
  saap run graph -format dot EchoAgent | dot -Tsvg > graph.svg
  saap replay 0123456789abcdef01234567 -pkg ./agents/echo
  source <(saap completion bash)            # or zsh; fish: saap completion fish | source

Run 'saap COMMAND -h' for a command's flags.
`

// errUsage marks errors that exit with status 2.
var errUsage = errors.New("usage")

// env is what every command gets: where to print and how to connect.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	natsURL        string
	color          bool
	// progress: stderr is a terminal, so waits get a line that says what
	// is awaited.
	progress bool
	// echoed: stdin is a terminal, which echoes what is typed, newline
	// included.
	echoed bool
}

// waiting says on stderr, on a terminal, what a wait is for; done clears
// the line.
func (e *env) waiting(format string, a ...any) (done func()) {
	if !e.progress {
		return func() {}
	}
	fmt.Fprintf(e.stderr, "\r"+format+"…", a...)
	return func() { fmt.Fprint(e.stderr, "\r\x1b[K") }
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, color: isTerminal(os.Stdout), progress: isTerminal(os.Stderr), echoed: isCharDevice(os.Stdin)})
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, e *env) int {
	fs := flag.NewFlagSet("saap", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	nats := fs.String("nats", "", "NATS server URL (default $NATS_URL)")
	version := fs.Bool("version", false, "print the command's version")
	if err := fs.Parse(args); err != nil {
		// Asked-for help is output, not an error: it goes to stdout.
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(e.stdout, usage)
			return 0
		}
		fmt.Fprintf(e.stderr, "saap: %v\n\n%s", err, usage)
		return 2
	}
	e.natsURL = *nats
	args = fs.Args()
	if *version {
		args = []string{"version"}
	}
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return 2
	}
	if args[0] == "help" {
		if len(args) == 1 || strings.HasPrefix(args[1], "-") {
			fmt.Fprint(e.stdout, usage)
			return 0
		}
		// saap help run show: the command's own help.
		args = append(args[1:], "-h")
	}
	cmds := map[string]func(context.Context, *env, []string) error{
		"agents":     cmdAgents,
		"tail":       cmdTail,
		"chat":       cmdChat,
		"run":        cmdRun,
		"replay":     cmdReplay,
		"completion": cmdCompletion,
		"version":    cmdVersion,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "saap: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	err := cmd(ctx, e, args[1:])
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(e.stderr, "saap %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(e.stderr, "saap %s: %v\n", args[0], err)
		return 1
	}
}

// flags returns a flag set for a command whose -h prints synopsis, the
// flags and the examples.
func flags(e *env, name, synopsis, examples string) *flag.FlagSet {
	fs := flag.NewFlagSet("saap "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: saap %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nExamples:\n%s", examples)
	}
	return fs
}

// parse parses args, turning a flag error into a usage error. Help asked
// for with -h goes to stdout, the usage after a flag error to stderr.
func parse(e *env, fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(e.stdout)
		fs.Usage()
		return err
	default:
		fs.SetOutput(e.stderr)
		fs.Usage()
		return fmt.Errorf("%w: %v", errUsage, err)
	}
}

// connect joins the NATS server of -nats or the environment.
func (e *env) connect() (*natsbus.Bus, error) {
	cfg, err := natsbus.ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	if e.natsURL != "" {
		cfg.URL = e.natsURL
	}
	if cfg.URL == "" {
		return nil, errors.New("no NATS server: set NATS_URL or -nats (dev mode prints its URL at start)")
	}
	cfg.Name = "saap"
	cfg.ReconnectWait = time.Second
	b, err := natsbus.Connect(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.URL, err)
	}
	return b, nil
}

// isTerminal reports whether f is a terminal that may show colours
// (NO_COLOR unset).
func isTerminal(f *os.File) bool {
	return os.Getenv("NO_COLOR") == "" && isCharDevice(f)
}

func isCharDevice(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

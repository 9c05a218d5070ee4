package demo

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/saap-go/agent"
)

// Message is one chat message of a request body, in the short form the
// gateway accepts ({"role","content"}).
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Command is an example's command line. Every example takes the same flags:
//
//	-ask text          send text instead of the demo conversation, print the run, exit
//	-serve addr        serve the gateway on addr until SIGINT/SIGTERM (":8080" binds to 127.0.0.1)
//	-allow-anonymous-remote  allow -serve on an address other machines can reach
//	-platform-config   fetch the agent's configuration from the platform
//	-v                 log the runner's and the gateway's info messages
//	-trace             export spans over OTLP (also on when OTEL_EXPORTER_OTLP_ENDPOINT is set);
//	                   only with Command.Tracing
//
// and differs only in what Command holds.
type Command struct {
	// Name prefixes the error printed on failure ("chat: ...").
	Name string
	// AskUsage is the help text of -ask.
	AskUsage string
	// Agent builds the agent once the flags are parsed.
	Agent func() (agent.Agent, error)
	// Instance is the agent_id the demo request addresses.
	Instance string
	// Demo is the conversation sent without -ask; its last message is the
	// user's turn.
	Demo []Message
	// Label names the answer in the printout (default "answer").
	Label string
	// Want is the event the run must end with; another one is an error.
	Want string
	// Tracing, if set, adds the -trace flag (demotrace.Tracing); without
	// it the command does not trace and links no exporter.
	Tracing Tracing
}

// Main parses the flags, runs c and exits with status 1 on failure.
func Main(c Command) {
	ask := flag.String("ask", "", c.AskUsage)
	serve := flag.String("serve", "", "serve the gateway on this address (e.g. :8080, which binds to 127.0.0.1) until SIGINT/SIGTERM")
	remote := flag.Bool("allow-anonymous-remote", false, "allow -serve on an address other machines can reach (anyone there gets in)")
	platform := flag.Bool("platform-config", false, "fetch the agent's configuration from the platform's config service instead of running standalone")
	verbose := flag.Bool("v", false, "log the runner's and gateway's info messages")
	traced := new(bool)
	if c.Tracing != nil {
		traced = flag.Bool("trace", false, "export OpenInference spans over OTLP (OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318); setting that variable turns tracing on too")
	}
	flag.Parse()
	o := Options{Platform: *platform, Verbose: *verbose, AllowAnonymousRemote: *remote, Trace: *traced, Tracing: c.Tracing}
	if err := c.run(*ask, *serve, o); err != nil {
		fmt.Fprintln(os.Stderr, c.Name+":", err)
		os.Exit(1)
	}
}

func (c Command) run(ask, serve string, o Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := c.Agent()
	if err != nil {
		return err
	}
	env, err := Start(ctx, a, o)
	if err != nil {
		return err
	}
	defer env.Close()
	env.instance = c.Instance
	if serve != "" {
		return env.Serve(ctx, serve)
	}
	messages := c.Demo
	if ask != "" {
		messages = []Message{{Role: "user", Content: ask}}
	}
	res, err := env.Ask(ctx, c.Instance, "UserMessageEvent", map[string]any{"messages": messages})
	if err != nil {
		return err
	}
	label := c.Label
	if label == "" {
		label = "answer"
	}
	fmt.Fprintf(env.out, "\nthe client's stream: %s\n", strings.Join(res.Stream, ", "))
	fmt.Fprintf(env.out, "%s (%s): %s\n", label, res.Name, res.Answer)
	if c.Want != "" && res.Name != c.Want {
		return fmt.Errorf("the run ended with %s, not %s", res.Name, c.Want)
	}
	return nil
}

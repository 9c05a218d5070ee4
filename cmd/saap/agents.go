package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/topic"
)

// discover runs one discovery cycle of window, or until every class of
// want answered, and returns the classes that answered, sorted. A wanted
// class that did not answer is no error here.
func discover(ctx context.Context, b *natsbus.Bus, window time.Duration, want ...string) ([]*event.AgentClassDiscoveryResponseEvent, error) {
	g, err := gateway.New(gateway.Config{Bus: b, Auth: gateway.Anonymous(event.UserIdentity{ID: "saap"}),
		DiscoveryWindow: window, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	// With want, Discover names the classes that answered even when some
	// did not; without a list it failed.
	if names, err := g.Discover(ctx, want...); err != nil && (names == nil || ctx.Err() != nil) {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	var out []*event.AgentClassDiscoveryResponseEvent
	for _, c := range g.Classes() {
		out = append(out, c.Response)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AgentClass < out[j].AgentClass })
	return out, nil
}

// knownClass fails fast for a class no agent ever ran with on this
// server: every running agent's class has its agent stream.
func knownClass(ctx context.Context, b *natsbus.Bus, class string) error {
	if err := topic.ValidateToken("agent_class", class); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	known, err := streamClasses(ctx, b)
	if err != nil || slices.Contains(known, class) {
		// Without JetStream's list, discovery alone decides.
		return nil
	}
	return fmt.Errorf("agent class %s is unknown on this server: no agent of it has started (known classes: %s)", class, dash(strings.Join(known, ", ")))
}

// discoverClass returns one class's discovery answer.
func discoverClass(ctx context.Context, b *natsbus.Bus, window time.Duration, class string) (*event.AgentClassDiscoveryResponseEvent, error) {
	if err := knownClass(ctx, b, class); err != nil {
		return nil, err
	}
	all, err := discover(ctx, b, window, class)
	if err != nil {
		return nil, err
	}
	for _, c := range all {
		if c.AgentClass == class {
			return c, nil
		}
	}
	return nil, fmt.Errorf("agent class %s did not answer discovery within %s (is an agent of it running?)", class, window)
}

func cmdAgents(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "agents", "agents [-json] [-wait D]", `  saap agents
  saap agents -json | jq '.[].agent_class'
`)
	asJSON := fs.Bool("json", false, "print the discovery answers as a JSON array")
	wait := fs.Duration("wait", 2*time.Second, "how long to collect discovery answers at most; it ends sooner once every class with an agent stream answered")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	b, err := e.connect()
	if err != nil {
		return err
	}
	defer b.Close()
	// The classes with an agent stream are the ones to expect: once they
	// all answered, waiting longer finds only agents started meanwhile.
	known, err := streamClasses(ctx, b)
	if err != nil {
		known = nil
	}
	done := e.waiting("collecting discovery answers for %s", *wait)
	classes, err := discover(ctx, b, *wait, known...)
	done()
	if err != nil {
		return err
	}
	if *asJSON {
		if classes == nil {
			classes = []*event.AgentClassDiscoveryResponseEvent{}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(classes)
	}
	if len(classes) == 0 {
		fmt.Fprintf(e.stderr, "no agent class answered discovery within %s\n", *wait)
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLASS\tNAME\tSTART\tSTOP\tHITL")
	for _, c := range classes {
		name := ""
		if c.Name != nil {
			name = c.Name.En
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.AgentClass, dash(name), names(c.StartEvents), names(c.StopEvents), names(c.HITLRequestEvents))
	}
	return tw.Flush()
}

func names(specs []event.EventSpecs) string {
	var out []string
	for _, s := range specs {
		out = append(out, s.EventName)
	}
	return dash(strings.Join(out, ","))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

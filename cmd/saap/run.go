package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/saap-go/agent/status"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/eventline"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

func cmdRun(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: run needs a subcommand: list, show, cancel or graph", errUsage)
	}
	switch args[0] {
	case "list":
		return cmdRunList(ctx, e, args[1:])
	case "show":
		return cmdRunShow(ctx, e, args[1:])
	case "cancel":
		return cmdRunCancel(ctx, e, args[1:])
	case "graph":
		return cmdRunGraph(ctx, e, args[1:])
	case "-h", "-help", "--help":
		fmt.Fprint(e.stdout, "Usage:\n  saap run list [-class C] [-thread T] [-state S,...] [-limit N] [-json]\n  saap run show [-class C] [-json] RUN\n  saap run cancel [-class C] [-reason R] [-wait D] RUN\n  saap run graph [-format mermaid|dot] CLASS\n\nRun 'saap run SUBCOMMAND -h' for its flags.\n")
		return nil
	}
	return fmt.Errorf("%w: unknown run subcommand %q (list, show, cancel, graph)", errUsage, args[0])
}

// stored is one event of a run as the stream keeps it; a recording is a
// list of them (the JSON agenttest.LoadRecording reads).
type stored struct {
	Subject string          `json:"subject"`
	Class   string          `json:"agent_class"`
	ID      string          `json:"agent_id"`
	Thread  string          `json:"thread_id"`
	Display string          `json:"display_id"`
	Run     string          `json:"run_id"`
	Type    string          `json:"event_type"`
	Name    string          `json:"event_name"`
	Time    time.Time       `json:"time"`
	Event   json.RawMessage `json:"event"`
	// Step, Trigger and Rerun are the engine's word on the event's origin
	// (bus.HeaderStep and its kin): the step, the event id it ran on, and
	// whether it ran again.
	Step    string `json:"step,omitempty"`
	Trigger string `json:"trigger_id,omitempty"`
	Rerun   bool   `json:"rerun,omitempty"`
}

// storedOf describes an event of an agent subject; ok is false for
// another subject.
func storedOf(subject string, data []byte, at time.Time) (stored, bool) {
	t, err := topic.ParseAgent(subject)
	if err != nil {
		return stored{}, false
	}
	return stored{Subject: subject, Class: t.Class, ID: t.ID, Thread: t.Thread, Display: t.Display,
		Run: t.Run, Type: string(t.Type), Name: t.Name, Time: at, Event: data}, true
}

// withOrigin adds the origin headers of the event's message.
func (s stored) withOrigin(h bus.Header) stored {
	s.Step, s.Trigger = h.Get(bus.HeaderStep), h.Get(bus.HeaderTrigger)
	s.Rerun = h.Get(bus.HeaderRerun) != ""
	return s
}

// recording is what `saap run show -json` prints.
type recording struct {
	Class  string   `json:"agent_class"`
	Run    string   `json:"run_id"`
	Events []stored `json:"events"`
}

// runEvents reads run's events from the first class stream that holds any.
func runEvents(ctx context.Context, b *natsbus.Bus, run string, classes []string) (string, []stored, error) {
	for _, class := range classes {
		filter, err := topic.AgentPattern{Class: class, Run: run}.Subject()
		if err != nil {
			return "", nil, err
		}
		msgs, err := bus.ReadAll(ctx, b, topic.StreamName(class), filter)
		if err != nil {
			return "", nil, err
		}
		var out []stored
		for _, m := range msgs {
			if s, ok := storedOf(m.Subject, m.Data, m.Time); ok {
				out = append(out, s.withOrigin(m.Header))
			}
		}
		if len(out) > 0 {
			return class, out, nil
		}
	}
	return "", nil, fmt.Errorf("run %s: no events in the streams of %s", run, dash(strings.Join(classes, ", ")))
}

// classesOf is the one class named by -class, or every class whose agent
// stream exists when it names none.
func classesOf(ctx context.Context, b *natsbus.Bus, class string) ([]string, error) {
	if class != "" {
		return []string{class}, nil
	}
	return streamClasses(ctx, b)
}

// streamClasses lists the classes whose agent stream exists.
func streamClasses(ctx context.Context, b *natsbus.Bus) ([]string, error) {
	var out []string
	names := b.JetStream().StreamNames(ctx)
	for n := range names.Name() {
		if c, ok := strings.CutPrefix(n, "agent_"); ok {
			if c, ok := strings.CutSuffix(c, "_stream"); ok {
				out = append(out, c)
			}
		}
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("listing streams: %w", err)
	}
	slices.Sort(out)
	return out, nil
}

func cmdRunShow(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "run show", "run show [-class C] [-json] [-wait D] RUN", `  saap run show 0123456789abcdef01234567
  saap run show -class EchoAgent -json 0123456789abcdef01234567 > run.json
`)
	class := fs.String("class", "", "the run's agent class (default: search every agent stream)")
	asJSON := fs.Bool("json", false, "print the recording as JSON (for agenttest.LoadRecording)")
	wait := fs.Duration("wait", time.Second, "how long to wait for the class's discovery answer, which names the steps")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: want one RUN id", errUsage)
	}
	run := fs.Arg(0)
	if err := topic.ValidateToken("run_id", run); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	b, err := e.connect()
	if err != nil {
		return err
	}
	defer b.Close()
	classes, err := classesOf(ctx, b, *class)
	if err != nil {
		return err
	}
	found, evs, err := runEvents(ctx, b, run, classes)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(recording{Class: found, Run: run, Events: evs})
	}
	var g *step.Graph
	if d, err := discoverClass(ctx, b, *wait, found); err == nil {
		g = new(step.Graph)
		if json.Unmarshal(d.NetworkGraph, g) != nil {
			g = nil
		}
	} else {
		fmt.Fprintf(e.stderr, "(no steps: %v)\n", err)
	}
	e.timeline(found, run, evs, g)
	e.status(ctx, b, found, run)
	return nil
}

// status prints the run's status as the class's replicas answer it; a
// class without a live replica has none to give.
func (e *env) status(ctx context.Context, b *natsbus.Bus, class, run string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := status.Request(ctx, b, class, run)
	if err != nil {
		fmt.Fprintf(e.stdout, "status: unknown (%v)\n", err)
		return
	}
	line := "status: " + string(st.State)
	if st.Question != nil {
		line += " for " + st.Question.Event + " " + st.Question.EventID
		if st.Question.Deadline != nil {
			line += " until " + st.Question.Deadline.Format(time.RFC3339)
		}
	}
	if st.Error != "" {
		line += ": " + st.Error
	}
	if len(st.Compensated) > 0 {
		line += "; compensated " + strings.Join(st.Compensated, ", ")
	}
	if len(st.CompensationFailed) > 0 {
		line += "; compensation failed " + strings.Join(st.CompensationFailed, ", ")
	}
	fmt.Fprintln(e.stdout, line)
}

// timeline prints a run's events with their offsets and, for control
// events a step produced, the step, its trigger and its duration.
func (e *env) timeline(class, run string, evs []stored, g *step.Graph) {
	first := evs[0]
	total := evs[len(evs)-1].Time.Sub(first.Time)
	fmt.Fprintf(e.stdout, "run %s of %s/%s  thread %s  %d events in %s\n", run, class, first.ID, first.Thread, len(evs), ms(total))
	type stat struct {
		runs, reruns int
		took         time.Duration
		on, out      []string
	}
	stats := map[string]*stat{}
	var order []string
	seen := map[string]bool{} // step + trigger id: a step's second output on one trigger is no second run
	for i, s := range evs {
		ev, _ := event.Unmarshal(s.Event)
		typ := "C"
		if s.Type == string(topic.Display) {
			typ = "D"
		}
		kind := kindOf(ev, s.Type)
		note := ""
		if typ == "C" && i > 0 {
			name, trig, rerun := origin(g, s, evs[:i])
			if name != "" {
				st := stats[name]
				if st == nil {
					st = &stat{}
					stats[name] = st
					order = append(order, name)
				}
				key := name + "/" + trig.Subject
				if !seen[key] {
					st.runs++
				}
				seen[key] = true
				re := ""
				if rerun {
					st.reruns++
					re = " re-run"
				}
				d := s.Time.Sub(trig.Time)
				st.took += d
				if !slices.Contains(st.on, trig.Name) {
					st.on = append(st.on, trig.Name)
				}
				if !slices.Contains(st.out, s.Name) {
					st.out = append(st.out, s.Name)
				}
				note = e.paint(dim, fmt.Sprintf("  ← %s on %s, %s%s", name, trig.Name, ms(d), re))
			}
		}
		fmt.Fprintf(e.stdout, "  %8s  %s %s %-32s %s%s\n", "+"+ms(s.Time.Sub(first.Time)), typ,
			e.paint(kindStyle[kind], fmt.Sprintf("%-8s", kind)), s.Name, eventline.Summary(ev, s.Event), note)
	}
	if len(order) > 0 {
		fmt.Fprintln(e.stdout, "steps:")
		for _, n := range order {
			st := stats[n]
			re := ""
			if st.reruns > 0 {
				re = fmt.Sprintf(", %d re-run", st.reruns)
			}
			fmt.Fprintf(e.stdout, "  %-16s %d run%s%s  %s  on %s → %s\n", n, st.runs, plural(st.runs), re, ms(st.took),
				strings.Join(st.on, ","), strings.Join(st.out, ","))
		}
	}
}

// origin names the step that produced s, the event it ran on and whether
// it was a re-run: as the engine's headers say, or, for a stream written
// without them, as guessed from g.
func origin(g *step.Graph, s stored, before []stored) (string, stored, bool) {
	if s.Step != "" {
		for i := len(before) - 1; i >= 0; i-- {
			if strings.HasSuffix(before[i].Subject, "."+s.Trigger) && before[i].Type == string(topic.Control) {
				return s.Step, before[i], s.Rerun
			}
		}
		return "", stored{}, false
	}
	if g == nil {
		return "", stored{}, false
	}
	name, trig := attribute(g, s.Name, before)
	return name, trig, false
}

// attribute finds the step of g that produced an event named name and the
// latest earlier control event that triggered it.
func attribute(g *step.Graph, name string, before []stored) (string, stored) {
	for _, l := range g.Links {
		// A question's link is labelled with the request's name without
		// its suffix.
		if (l.EventName != name && l.EventName+"RequestEvent" != name) || l.Source == step.StartNode {
			continue
		}
		var triggers []string
		for _, in := range g.Links {
			if in.Target == l.Source {
				triggers = append(triggers, in.EventName)
			}
		}
		for i := len(before) - 1; i >= 0; i-- {
			// A question's link is labelled without its suffix: the
			// response event triggers the step.
			n := before[i].Name
			if before[i].Type == string(topic.Control) && (slices.Contains(triggers, n) || slices.Contains(triggers, strings.TrimSuffix(n, "ResponseEvent"))) {
				return l.Source, before[i]
			}
		}
	}
	return "", stored{}
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%dms", d.Milliseconds())
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func cmdRunGraph(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "run graph", "run graph [-format mermaid|dot] [-wait D] CLASS", `  saap run graph EchoAgent
  saap run graph -format dot EchoAgent | dot -Tsvg > echo.svg
`)
	format := fs.String("format", "mermaid", "mermaid or dot")
	wait := fs.Duration("wait", 5*time.Second, "how long to wait for the class's discovery answer")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: want one CLASS", errUsage)
	}
	if *format != "mermaid" && *format != "dot" {
		return fmt.Errorf("%w: -format %q: want mermaid or dot", errUsage, *format)
	}
	b, err := e.connect()
	if err != nil {
		return err
	}
	defer b.Close()
	d, err := discoverClass(ctx, b, *wait, fs.Arg(0))
	if err != nil {
		return err
	}
	var g step.Graph
	if err := json.Unmarshal(d.NetworkGraph, &g); err != nil {
		return fmt.Errorf("class %s: its network_graph: %w", d.AgentClass, err)
	}
	if *format == "dot" {
		fmt.Fprint(e.stdout, dot(g))
	} else {
		fmt.Fprint(e.stdout, mermaid(g))
	}
	return nil
}

// mermaid renders a discovery graph as a Mermaid flowchart.
func mermaid(g step.Graph) string {
	ids := map[string]string{}
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for i, n := range g.Nodes {
		id := fmt.Sprintf("n%d", i)
		ids[n.ID] = id
		if n.Type == "step" {
			fmt.Fprintf(&b, "    %s[%s]\n", id, quote(n.Label))
		} else {
			fmt.Fprintf(&b, "    %s([%s])\n", id, quote(n.Label))
		}
	}
	seen := map[string]bool{}
	for _, l := range g.Links {
		line := fmt.Sprintf("    %s -->|%s| %s\n", ids[l.Source], quote(l.EventName), ids[l.Target])
		if !seen[line] {
			seen[line] = true
			b.WriteString(line)
		}
	}
	return b.String()
}

// dot renders a discovery graph in Graphviz's DOT language.
func dot(g step.Graph) string {
	var b strings.Builder
	b.WriteString("digraph workflow {\n    rankdir=TB;\n    node [shape=box, style=rounded];\n")
	for _, n := range g.Nodes {
		shape := ""
		if n.Type != "step" {
			shape = ", shape=oval"
		}
		fmt.Fprintf(&b, "    %s [label=%s%s];\n", dotQuote(n.ID), dotQuote(n.Label), shape)
	}
	seen := map[string]bool{}
	for _, l := range g.Links {
		line := fmt.Sprintf("    %s -> %s [label=%s];\n", dotQuote(l.Source), dotQuote(l.Target), dotQuote(l.EventName))
		if !seen[line] {
			seen[line] = true
			b.WriteString(line)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, "#quot;") + `"` }

func dotQuote(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}

func cmdRunList(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "run list", "run list [-class C] [-thread T] [-state S,...] [-limit N] [-json]", `  saap run list                              # the runs of every class with a live replica
  saap run list -class EchoAgent -state waiting
  saap run list -class EchoAgent -thread 0123456789abcdef01234567 -json
`)
	class := fs.String("class", "", "the agent class (default: every class with an agent stream)")
	thread := fs.String("thread", "", "only runs of this thread id")
	states := fs.String("state", "", "only runs in these states, comma-separated: "+status.StateNames)
	limit := fs.Int("limit", status.DefaultPageSize, "at most this many runs per class, in ascending order of run id")
	asJSON := fs.Bool("json", false, "print the status records as a JSON array")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	q := status.Query{Thread: *thread}
	if *thread != "" {
		if err := topic.ValidateToken("thread_id", *thread); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	if *states != "" {
		for _, s := range strings.Split(*states, ",") {
			st := status.State(strings.TrimSpace(s))
			if !st.Valid() {
				return fmt.Errorf("%w: -state %q: want one of %s", errUsage, s, status.StateNames)
			}
			q.States = append(q.States, st)
		}
	}
	if *limit <= 0 {
		return fmt.Errorf("%w: -limit %d: want a positive number", errUsage, *limit)
	}
	b, err := e.connect()
	if err != nil {
		return err
	}
	defer b.Close()
	classes, err := classesOf(ctx, b, *class)
	if err != nil {
		return err
	}
	runs := []status.Record{}
	for _, c := range classes {
		got, err := listRuns(ctx, b, c, q, *limit)
		if err != nil {
			if *class != "" {
				return err
			}
			// Another class's stream may outlive its replicas.
			fmt.Fprintf(e.stderr, "(%s: %v)\n", c, err)
			continue
		}
		runs = append(runs, got...)
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(runs)
	}
	if len(runs) == 0 {
		fmt.Fprintln(e.stderr, "no runs")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tCLASS\tAGENT\tTHREAD\tSTATUS\tUPDATED\tDETAIL")
	for _, r := range runs {
		detail := r.Error
		if r.Question != nil {
			detail = r.Question.Event
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Run, r.Class, dash(r.AgentID), dash(r.Thread), r.State,
			r.Updated.Local().Format("15:04:05.000"), dash(detail))
	}
	return tw.Flush()
}

// listRuns asks class's replicas for up to limit runs, page by page.
func listRuns(ctx context.Context, b *natsbus.Bus, class string, q status.Query, limit int) ([]status.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var out []status.Record
	for len(out) < limit {
		q.Limit = min(limit-len(out), status.MaxPageSize)
		page, err := status.RequestList(ctx, b, class, q)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Runs...)
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	return out, nil
}

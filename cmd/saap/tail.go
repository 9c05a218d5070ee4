package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/eventline"
	"github.com/saap-go/agent/topic"
)

func cmdTail(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "tail", "tail [-class C] [-thread T] [-run R] [-n N] [-json]", `  saap tail                      # every agent event
  saap tail -class EchoAgent      # one class
  saap tail -run 0123456789abcdef01234567 -n 10
  saap tail -json | jq -c '{event_name, run_id}'
`)
	class := fs.String("class", "", "only events of this agent class")
	thread := fs.String("thread", "", "only events of this thread id")
	run := fs.String("run", "", "only events of this run id")
	n := fs.Int("n", 0, "exit after this many events (0: until interrupted)")
	asJSON := fs.Bool("json", false, "print each event as one line of JSON: its subject's fields and the event")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	pattern, err := topic.AgentPattern{Class: *class, Thread: *thread, Run: *run}.Subject()
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	b, err := e.connect()
	if err != nil {
		return err
	}
	defer b.Close()
	lines := make(chan string, 1024)
	sub, err := b.Subscribe(ctx, pattern, "", func(m *bus.Msg) {
		if *asJSON {
			lines <- jsonLine(m.Subject, m.Header, m.Data, time.Now())
			return
		}
		lines <- e.line(m.Subject, m.Data, time.Now())
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	fmt.Fprintf(e.stderr, "following %s (Ctrl-C stops)\n", pattern)
	for count := 0; *n == 0 || count < *n; count++ {
		select {
		case <-ctx.Done():
			return nil
		case l := <-lines:
			fmt.Fprintln(e.stdout, l)
		}
	}
	return nil
}

// line formats one event of an agent subject: time, kind, name, where,
// and its content.
func (e *env) line(subject string, data []byte, at time.Time) string {
	t, err := topic.ParseAgent(subject)
	if err != nil {
		return fmt.Sprintf("%s ? %s", at.Format("15:04:05.000"), subject)
	}
	ev, _ := event.Unmarshal(data)
	kind := kindOf(ev, string(t.Type))
	typ := "C"
	if t.Type == topic.Display {
		typ = "D"
	}
	return fmt.Sprintf("%s %s %s %-32s %s/%s run=%s %s", e.paint(dim, at.Format("15:04:05.000")), typ,
		e.paint(kindStyle[kind], fmt.Sprintf("%-8s", kind)), t.Name, t.Class, t.ID, t.Run, eventline.Summary(ev, data))
}

// jsonLine is one event as a line of JSON, in the shape of an event of
// `saap run show -json`, with the step that produced it.
func jsonLine(subject string, h bus.Header, data []byte, at time.Time) string {
	s, ok := storedOf(subject, data, at)
	s = s.withOrigin(h)
	if !ok {
		s = stored{Subject: subject, Time: at, Event: data}
	}
	if !json.Valid(data) {
		// Not an event: keep the bytes as a JSON string.
		s.Event, _ = json.Marshal(string(data))
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Sprintf(`{"subject":%q,"error":%q}`, subject, err.Error())
	}
	return string(b)
}

package faults

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/topic"
)

// report is what the checker found after a scenario.
type report struct {
	Runs           int // runs the test started
	Completed      int // runs with a StopEvent
	Exception      int // runs with an ExceptionEvent
	DeadLetters    int // dead letters of the class
	Silent         int // runs with neither a StopEvent nor an ExceptionEvent
	Undeadlettered int // runs with an ExceptionEvent but no dead letter
	Duplicates     int // event ids stored more than once in the class's stream
	Extra          int // control events beyond one per event name in a run (a step's output published twice under different ids)
	Reruns         int // repeated executions of the Work step (absorbed by its idempotency key)
	ConnsClosed    int // connections the server closed for a fault of the client, or agents without a connection

	outcome     map[string]string     // run id → "completed", "exception" or "silent"
	deadletters map[string][]deadInfo // run id → its dead letters
	dupIDs      []string
	extra       []string
	closed      []string
	terminal    map[string][]string // run id → its terminal events, for every run in the stream
	effects     map[string]int      // run id → Work side effects
	reruns      map[string]int      // run id → Work re-runs
}

type deadInfo struct {
	subject, reason string
}

func (r *report) String() string {
	return fmt.Sprintf("runs=%d completed=%d exception=%d deadletters=%d silent=%d undeadlettered=%d duplicates=%d extra=%d reruns=%d conns_closed=%d",
		r.Runs, r.Completed, r.Exception, r.DeadLetters, r.Silent, r.Undeadlettered, r.Duplicates, r.Extra, r.Reruns, r.ConnsClosed)
}

// scan is one read of the class's stream.
type scan struct {
	terminal map[string][]string       // run id → names of its terminal events
	ids      map[string]int            // "<event_type>:<event id>" → copies
	names    map[string]map[string]int // run id → control event name → events
}

// scanStream reads every message of the class's stream.
func (e *env) scanStream(ctx context.Context) (*scan, error) {
	sc := &scan{terminal: map[string][]string{}, ids: map[string]int{}, names: map[string]map[string]int{}}
	err := readAll(ctx, e.js, topic.StreamName(e.class), "", func(m jetstream.Msg) {
		t := strings.Split(m.Subject(), ".")
		if len(t) != 9 {
			return
		}
		if sc.ids[t[6]+":"+t[8]]++; sc.ids[t[6]+":"+t[8]] == 1 && t[6] == string(topic.Control) {
			if sc.names[t[5]] == nil {
				sc.names[t[5]] = map[string]int{}
			}
			sc.names[t[5]][t[7]]++
		}
		if t[6] == string(topic.Control) && (t[7] == "StopEvent" || t[7] == "ExceptionEvent") {
			sc.terminal[t[5]] = append(sc.terminal[t[5]], t[7])
		}
	})
	return sc, err
}

// deadLetters reads the class's dead letters, by the run of the original
// subject ("" when it has no run token).
func (e *env) deadLetters(ctx context.Context) (map[string][]deadInfo, int, error) {
	out := map[string][]deadInfo{}
	n := 0
	prefix := bus.DefaultDeadLetters().Subject("agent." + e.class)
	err := readAll(ctx, e.js, bus.DefaultDeadLetters().Stream, prefix+".>", func(m jetstream.Msg) {
		n++
		orig := m.Headers().Get(bus.HeaderDeadLetterSubject)
		run := ""
		if t := strings.Split(orig, "."); len(t) == 9 {
			run = t[5]
		}
		out[run] = append(out[run], deadInfo{subject: orig, reason: m.Headers().Get(bus.HeaderDeadLetterReason)})
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		err = nil // nothing was ever dead-lettered
	}
	return out, n, err
}

// readAll hands every message of stream (matching filter, if any) stored
// when it is called to f.
func readAll(ctx context.Context, js jetstream.JetStream, stream, filter string, f func(jetstream.Msg)) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return err
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		return nil
	}
	cfg := jetstream.OrderedConsumerConfig{}
	if filter != "" {
		cfg.FilterSubjects = []string{filter}
	}
	c, err := s.OrderedConsumer(ctx, cfg)
	if err != nil {
		return err
	}
	for {
		batch, err := c.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			f(m)
			md, err := m.Metadata()
			if err != nil {
				return err
			}
			if md.Sequence.Stream >= last || md.NumPending == 0 {
				return nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return err
		}
		if got == 0 {
			return nil // nothing more matches up to last
		}
	}
}

// check waits up to settle for every run to end — a StopEvent, or an
// ExceptionEvent and a dead letter — then reads the stream, the dead
// letters, the effects and the server's connections, and returns what it
// found. Runs that have not ended by then count as silent.
func (e *env) check(settle time.Duration, agentsUp ...string) *report {
	e.t.Helper()
	wake := make(chan struct{}, 1)
	poke := func(*nats.Msg) {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	for _, s := range []string{"agent." + e.class + ".>", bus.DefaultDeadLetters().Subject("agent."+e.class) + ".>"} {
		sub, err := e.nc.Subscribe(s, poke)
		if err != nil {
			e.t.Fatal(err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	}
	began := time.Now()
	deadline := began.Add(settle)
	defer func() { e.t.Logf("check: settled in %s", time.Since(began).Round(time.Millisecond)) }()
	var (
		sc    *scan
		dead  map[string][]deadInfo
		ndead int
	)
	for {
		var err error
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		sc, err = e.scanStream(ctx)
		if err == nil {
			dead, ndead, err = e.deadLetters(ctx)
		}
		cancel()
		if err == nil && e.allEnded(sc, dead) {
			break
		}
		if time.Now().After(deadline) {
			if err != nil {
				e.t.Fatalf("reading the streams: %v", err)
			}
			break
		}
		select {
		case <-wake:
		case <-time.After(2 * time.Second): // a rescan also when the wake-up was lost in a reconnect
		}
	}

	r := &report{Runs: len(e.runs), DeadLetters: ndead, outcome: map[string]string{}, deadletters: dead, terminal: sc.terminal}
	for _, run := range e.runs {
		names := sc.terminal[run.Run]
		switch {
		case contains(names, "ExceptionEvent"):
			r.Exception++
			r.outcome[run.Run] = "exception"
			if len(dead[run.Run]) == 0 {
				r.Undeadlettered++
			}
		case contains(names, "StopEvent"):
			r.Completed++
			r.outcome[run.Run] = "completed"
		default:
			r.Silent++
			r.outcome[run.Run] = "silent"
		}
	}
	for id, n := range sc.ids {
		if n > 1 {
			r.Duplicates += n - 1
			r.dupIDs = append(r.dupIDs, fmt.Sprintf("%s×%d", id, n))
		}
	}
	sort.Strings(r.dupIDs)
	for _, run := range e.runs {
		for name, n := range sc.names[run.Run] {
			if n > 1 {
				r.Extra += n - 1
				r.extra = append(r.extra, fmt.Sprintf("run %s: %d %s", run.Run, n, name))
			}
		}
	}
	sort.Strings(r.extra)
	r.effects, r.reruns = e.workEffects()
	for _, n := range r.reruns {
		r.Reruns += n
	}
	r.closed = e.closedConns(agentsUp)
	r.ConnsClosed = len(r.closed)
	return r
}

func (e *env) allEnded(sc *scan, dead map[string][]deadInfo) bool {
	for _, run := range e.runs {
		names := sc.terminal[run.Run]
		if len(names) == 0 || (contains(names, "ExceptionEvent") && len(dead[run.Run]) == 0) {
			return false
		}
	}
	for _, run := range e.expectDead {
		if len(dead[run]) == 0 {
			return false
		}
	}
	return true
}

// clientFaults are close reasons that mean the server threw a client out
// for something it sent or could not take.
var clientFaults = []string{"Maximum", "Violation", "Slow Consumer", "Parse Error", "Protocol", "Authorization", "Authentication"}

// closedConns lists the connections the server closed for a client's
// fault, and each name in up (a connection name) that has no open
// connection.
func (e *env) closedConns(up []string) []string {
	e.t.Helper()
	var out []string
	closed, err := e.nats.connz("closed")
	if err != nil {
		e.t.Fatal(err)
	}
	for _, c := range closed {
		for _, f := range clientFaults {
			if strings.Contains(c.Reason, f) {
				out = append(out, fmt.Sprintf("%q closed: %s", c.Name, c.Reason))
				break
			}
		}
	}
	open, err := e.nats.connz("open")
	if err != nil {
		e.t.Fatal(err)
	}
	for _, name := range up {
		found := false
		for _, c := range open {
			found = found || c.Name == name
		}
		if !found {
			out = append(out, fmt.Sprintf("%q has no open connection", name))
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// log prints the report's counts with t.Logf and, with -v, on stdout.
func (r *report) log(t *testing.T, scenario string) {
	t.Helper()
	line := scenario + ": " + r.String()
	t.Log(line)
	if testing.Verbose() {
		fmt.Println(line)
	}
}

// assertInvariants checks what holds in every scenario: every run ended
// (completed, or an ExceptionEvent and a dead letter), no duplicate event
// ids and no event published twice under different ids, no connection
// left closed.
func (r *report) assertInvariants(t *testing.T) {
	t.Helper()
	if r.Silent > 0 {
		var silent []string
		for run, o := range r.outcome {
			if o == "silent" {
				silent = append(silent, run)
			}
		}
		sort.Strings(silent)
		t.Errorf("%d runs never ended (silent drops), e.g. %v", r.Silent, silent[:min(5, len(silent))])
	}
	if r.Undeadlettered > 0 {
		t.Errorf("%d runs ended with an ExceptionEvent but left no dead letter", r.Undeadlettered)
	}
	if r.Duplicates > 0 {
		t.Errorf("%d duplicate event ids in the stream: %v", r.Duplicates, r.dupIDs[:min(5, len(r.dupIDs))])
	}
	if r.Extra > 0 {
		t.Errorf("%d extra events (a step's output published again under another id): %v", r.Extra, r.extra[:min(5, len(r.extra))])
	}
	if r.ConnsClosed > 0 {
		t.Errorf("connections left closed: %v", r.closed)
	}
}

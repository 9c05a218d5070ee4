package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Recording is a run as it was stored: every event of the run on its
// class's stream, in stream order. `saap run show -json RUN` prints one;
// LoadRecording reads that file and RecordRun reads a stream directly.
type Recording struct {
	Class  string     `json:"agent_class"`
	Run    string     `json:"run_id"`
	Events []Recorded `json:"events"`
}

// Recorded is one stored event of a Recording.
type Recorded struct {
	Subject string          `json:"subject"`
	Time    time.Time       `json:"time"`
	Event   json.RawMessage `json:"event"`
}

// LoadRecording reads a recording from a JSON file.
func LoadRecording(path string) (*Recording, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agenttest: recording: %w", err)
	}
	var rec Recording
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("agenttest: recording %s: %w", path, err)
	}
	if len(rec.Events) == 0 {
		return nil, fmt.Errorf("agenttest: recording %s holds no events", path)
	}
	return &rec, nil
}

// RecordRun reads the events of run from the stream of class. It wraps
// bus.ErrNotFound when the stream holds none.
func RecordRun(ctx context.Context, s bus.MessageReader, class, run string) (*Recording, error) {
	if err := topic.ValidateToken("agent_class", class); err != nil {
		return nil, fmt.Errorf("agenttest: %w", err)
	}
	if err := topic.ValidateToken("run_id", run); err != nil {
		return nil, fmt.Errorf("agenttest: %w", err)
	}
	rec := &Recording{Class: class, Run: run}
	filter, err := topic.AgentPattern{Class: class, Run: run}.Subject()
	if err != nil {
		return nil, fmt.Errorf("agenttest: %w", err)
	}
	msgs, err := bus.ReadAll(ctx, s, topic.StreamName(class), filter)
	if err != nil {
		return nil, fmt.Errorf("agenttest: recording run %s: %w", run, err)
	}
	for _, m := range msgs {
		rec.Events = append(rec.Events, Recorded{Subject: m.Subject, Time: m.Time, Event: m.Data})
	}
	if len(rec.Events) == 0 {
		return nil, fmt.Errorf("agenttest: run %s: no events in stream %s: %w", run, topic.StreamName(class), bus.ErrNotFound)
	}
	return rec, nil
}

// Output is an event a run published, as a replay compares it: where it
// went, its name and its own fields: without event_id and created_at (at
// any depth), which differ from run to run, and without the type's names
// and display texts, which only add noise to a diff.
type Output struct {
	Type   string
	Name   string
	Fields map[string]any
}

// Replay replays rec against w and reports a test error with a go-cmp diff
// (-recorded +replayed) when the run's outputs differ. It returns the diff,
// "" for a clean replay.
func Replay(t testing.TB, w *step.Workflow, rec *Recording, opts ...Option) string {
	t.Helper()
	d := ReplayDiff(t, w, rec, opts...)
	if d != "" {
		t.Errorf("agenttest: replaying run %s of %s: the outputs differ (-recorded +replayed):\n%s", rec.Run, rec.Class, d)
	}
	return d
}

// ReplayDiff replays rec against w, the current code: it sends the run's
// inputs (its start event and every control event no step of w emits,
// such as answers to questions, each answer pointed at the replayed
// question) into a harness run with the recorded ids, and returns the
// go-cmp diff (-recorded +replayed) of the outputs, "" when they are the
// same. The inputs are the events that trigger steps of w and that no step
// of w emits; everything else is output.
func ReplayDiff(t testing.TB, w *step.Workflow, rec *Recording, opts ...Option) string {
	t.Helper()
	input := inputsOf(w)
	var (
		ident    topic.Agent
		inputs   []Recorded
		recorded []Output
	)
	for i, r := range rec.Events {
		a, err := topic.ParseAgent(r.Subject)
		if err != nil {
			t.Fatalf("agenttest: recording event %d: %v", i, err)
		}
		if ident.Run == "" {
			ident = topic.Agent{Class: a.Class, ID: a.ID, Thread: a.Thread, Display: a.Display, Run: a.Run}
		}
		switch {
		case !input[a.Name]:
			recorded = append(recorded, output(t, a, r.Event))
		case a.Type == topic.Control:
			inputs = append(inputs, r)
		}
	}
	if len(inputs) == 0 {
		t.Fatalf("agenttest: recording of run %s has no input event (no start)", rec.Run)
	}
	h := New(t, w, opts...)
	res := h.NewRun(RunID(ident.Run), Thread(ident.Thread))
	res.mu.Lock()
	res.topic.ID, res.topic.Display = ident.ID, ident.Display
	res.mu.Unlock()
	for _, in := range inputs {
		h.SendRaw(res, pointAtReplayedRequest(t, res, in.Event))
	}
	var replayed []Output
	for _, p := range res.Events() {
		if input[p.Topic.Name] {
			continue
		}
		data, err := event.Marshal(p.Event)
		if err != nil {
			t.Fatalf("agenttest: encode %s: %v", p.Topic.Name, err)
		}
		replayed = append(replayed, output(t, p.Topic, data))
	}
	return cmp.Diff(recorded, replayed)
}

// inputsOf returns the names of the events that enter a run of w from
// outside: those its steps are triggered by and none of them emits (the
// start, answers to questions, timeouts). Everything else a run holds is
// output: what the steps return and what they emit mid-step (chunks,
// thoughts, tool calls).
func inputsOf(w *step.Workflow) map[string]bool {
	emitted := map[string]bool{}
	for _, s := range w.Steps() {
		for _, o := range s.Outputs() {
			emitted[o] = true
		}
	}
	for _, r := range w.HITLRequests() {
		emitted[r] = true
	}
	in := map[string]bool{}
	for _, s := range w.Steps() {
		for _, t := range s.Triggers() {
			if !emitted[t] {
				in[t] = true
			}
		}
	}
	for _, n := range w.StartEvents() {
		in[n] = true
	}
	return in
}

// pointAtReplayedRequest replaces the request_event of an answer with the
// latest replayed event of the same name, so the answer reaches the
// question the replay asked.
func pointAtReplayedRequest(t testing.TB, res *Result, data []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || m["request_event"] == nil {
		return data
	}
	var req struct {
		Name string `json:"_event_name"`
	}
	if json.Unmarshal(m["request_event"], &req) != nil || req.Name == "" {
		return data
	}
	asked := res.Get(req.Name)
	if len(asked) == 0 {
		return data // the replay asked nothing: the diff tells
	}
	raw, err := event.Marshal(asked[len(asked)-1])
	if err != nil {
		t.Fatalf("agenttest: encode %s: %v", req.Name, err)
	}
	m["request_event"] = raw
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("agenttest: re-encode answer: %v", err)
	}
	return out
}

func output(t testing.TB, a topic.Agent, data []byte) Output {
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatalf("agenttest: event %s: %v", a.Name, err)
	}
	stripRunFields(fields)
	return Output{Type: string(a.Type), Name: a.Name, Fields: fields}
}

// stripRunFields removes the per-run fields, at any depth.
func stripRunFields(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range []string{"event_id", "created_at", "_event_name", "_parent_event_names", "display_name", "display_description"} {
			delete(x, k)
		}
		for _, e := range x {
			stripRunFields(e)
		}
	case []any:
		for _, e := range x {
			stripRunFields(e)
		}
	}
}

// EnvReplay names the recording `saap replay` hands to ReplayRecordings.
const EnvReplay = "SAAP_REPLAY"

// ReplayRecordings replays against w, each in a subtest named after its
// file, every recording in testdata/recordings/*.json and the one the
// environment variable SAAP_REPLAY names (set by `saap replay`). It skips
// the test when there is none. A package's replay test is one line:
//
//	func TestReplay(t *testing.T) { agenttest.ReplayRecordings(t, workflow(t)) }
func ReplayRecordings(t *testing.T, w *step.Workflow, opts ...Option) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "recordings", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if f := os.Getenv(EnvReplay); f != "" {
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Skip("agenttest: no recording to replay (testdata/recordings/*.json or $" + EnvReplay + ")")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			rec, err := LoadRecording(f)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Class != "" && rec.Class != w.Class() {
				t.Fatalf("agenttest: %s records a run of %s, not of %s", f, rec.Class, w.Class())
			}
			Replay(t, w, rec, opts...)
		})
	}
}

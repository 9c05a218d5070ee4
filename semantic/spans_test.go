package semantic_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/semantic"
	"github.com/saap-go/agent/step"
)

// The flow events of the traced test agent.
type (
	Docs  struct{ event.ControlEvent }
	Draft struct {
		event.ControlEvent
		Text string `json:"text"`
	}
)

func init() {
	event.MustRegister[Docs]()
	event.MustRegister[Draft]()
}

// recorder collects spans and metrics in memory.
type recorder struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	r.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		_ = r.tp.Shutdown(context.Background())
		_ = r.mp.Shutdown(context.Background())
	})
	return r
}

func (r *recorder) tracing(opts ...semantic.Option) *semantic.Tracing {
	return semantic.New(append([]semantic.Option{semantic.WithTracerProvider(r.tp), semantic.WithMeterProvider(r.mp)}, opts...)...)
}

// tree indexes ended spans by name and id.
type tree struct {
	t     *testing.T
	spans []sdktrace.ReadOnlySpan
	byID  map[trace.SpanID]sdktrace.ReadOnlySpan
}

func (r *recorder) tree(t *testing.T) *tree {
	tr := &tree{t: t, spans: r.spans.Ended(), byID: map[trace.SpanID]sdktrace.ReadOnlySpan{}}
	for _, s := range tr.spans {
		tr.byID[s.SpanContext().SpanID()] = s
	}
	return tr
}

// one returns the only span called name.
func (tr *tree) one(name string) sdktrace.ReadOnlySpan {
	tr.t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range tr.spans {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		tr.t.Fatalf("%d spans named %q; spans: %s", len(found), name, tr)
	}
	return found[0]
}

func (tr *tree) String() string {
	var b strings.Builder
	for _, s := range tr.spans {
		parent := "-"
		if p, ok := tr.byID[s.Parent().SpanID()]; ok {
			parent = p.Name()
		}
		fmt.Fprintf(&b, "\n  %s (parent %s)", s.Name(), parent)
	}
	return b.String()
}

// parentOf checks that child's parent is parent.
func (tr *tree) parentOf(parent, child sdktrace.ReadOnlySpan) {
	tr.t.Helper()
	if child.Parent().SpanID() != parent.SpanContext().SpanID() {
		tr.t.Errorf("parent of %q is %s, want %q; spans: %s", child.Name(), child.Parent().SpanID(), parent.Name(), tr)
	}
}

// oneTrace checks that every span is in one trace.
func (tr *tree) oneTrace() trace.TraceID {
	tr.t.Helper()
	id := tr.spans[0].SpanContext().TraceID()
	for _, s := range tr.spans {
		if s.SpanContext().TraceID() != id {
			tr.t.Fatalf("span %q in trace %s, want %s", s.Name(), s.SpanContext().TraceID(), id)
		}
	}
	return id
}

func attrs(s sdktrace.ReadOnlySpan) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]any) {
	t.Helper()
	got := attrs(s)
	for k, w := range want {
		v, ok := got[k]
		if !ok {
			t.Errorf("span %q has no attribute %s; has %v", s.Name(), k, s.Attributes())
			continue
		}
		if v.AsInterface() != w {
			t.Errorf("span %q: %s = %v (%T), want %v (%T)", s.Name(), k, v.AsInterface(), v.AsInterface(), w, w)
		}
	}
}

func user() *event.UserMessageEvent {
	return &event.UserMessageEvent{Locale: "de",
		User:     &event.UserIdentity{ID: "user-7", Name: "Ann", Email: "ann@example.org", Roles: []string{}},
		Messages: []event.ChatMessage{}, RequestedFeatures: []event.ChatFeature{}}
}

// tracedAgent retrieves, generates with a tool and an LLM call, and
// finishes: three steps, three semantic events, one span of its own.
func tracedAgent(t *testing.T, class string) *step.Workflow {
	retrieve := step.New(func(ctx step.Context, q *event.UserMessageEvent) ([]event.Event, error) {
		r := &event.RetrieverEvent{Nodes: []event.IngestedNode{{ID: "n1", Content: "Bern", DocumentID: "d1", Version: 1}}}
		r.CreatedAt = time.Now().UnixNano()
		return []event.Event{r, &Docs{}}, nil
	}, step.Name("retrieve"), step.Emits(&event.RetrieverEvent{}, &Docs{}))
	generate := step.New(func(ctx step.Context, d *Docs) ([]event.Event, error) {
		_, span := ctx.Tracer().Start(ctx, "own work")
		span.End()
		tool := &event.ToolEvent{Name: str("search")}
		tool.CreatedAt = time.Now().UnixNano()
		time.Sleep(time.Millisecond) // distinct times, so the spans' order shows
		llm := &event.LLMEvent{ChatModelName: str("gpt-4o"), TokenCountTotal: i64(12),
			InputMessages: []event.Message{event.MessageFromString("user", "capital?")}}
		llm.CreatedAt = time.Now().UnixNano()
		return []event.Event{tool, llm, &Draft{Text: "Bern"}}, nil
	}, step.Name("generate"), step.Emits(&event.ToolEvent{}, &event.LLMEvent{}, &Draft{}))
	finish := step.New(func(ctx step.Context, d *Draft) (*event.StopEvent, error) {
		return &event.StopEvent{}, nil
	}, step.Name("finish"))
	w, err := step.NewWorkflow(class, retrieve, generate, finish)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestMultiStepRunSpans(t *testing.T) {
	rec := newRecorder(t)
	tr := rec.tracing()
	h := agenttest.New(t, tracedAgent(t, "TracedAgent"), agenttest.WithInterceptors(tr), agenttest.FailOnStall())
	res := h.Start(user(), agenttest.Thread("thread-1"))
	if _, ok := agenttest.TerminalAs[*event.StopEvent](res); !ok {
		t.Fatalf("terminal %v", res.Terminal())
	}
	tree := rec.tree(t)
	tree.oneTrace()

	run := tree.one("run TracedAgent")
	if run.Parent().IsValid() {
		t.Errorf("the run span has a parent: the start came without a trace")
	}
	wantAttrs(t, run, map[string]any{"openinference.span.kind": "AGENT", "saap.agent.class": "TracedAgent",
		"session.id": "thread-1", "user.id": "user-7", "saap.run.id": res.RunID(), "saap.run.outcome": "completed"})
	if run.Status().Code == codes.Error {
		t.Errorf("run status %v", run.Status())
	}

	steps := map[string]string{"retrieve": "UserMessageEvent", "generate": "Docs", "finish": "Draft"}
	for name, trigger := range steps {
		s := tree.one("step " + name)
		// step <- process <- receive <- run: every hop hangs under the run.
		proc := tree.byID[s.Parent().SpanID()]
		if proc == nil || proc.Name() != "agent_runner_TracedAgent.process "+trigger {
			t.Fatalf("parent of step %s: %v; spans %s", name, proc, tree)
		}
		recv := tree.byID[proc.Parent().SpanID()]
		if recv == nil || recv.Name() != "agent_runner_TracedAgent.receive "+trigger {
			t.Fatalf("parent of %s: %v; spans %s", proc.Name(), recv, tree)
		}
		tree.parentOf(run, recv)
		// OpenInference viewers need a kind on every span: the hops are chains.
		wantAttrs(t, recv, map[string]any{"openinference.span.kind": "CHAIN"})
		wantAttrs(t, proc, map[string]any{"openinference.span.kind": "CHAIN"})
		wantAttrs(t, s, map[string]any{"saap.step.name": name, "saap.step.trigger": trigger, "saap.step.attempt": int64(1),
			"saap.step.rerun": false, "saap.step.outcome": "ok", "session.id": "thread-1", "openinference.span.kind": "CHAIN"})
		if k := attrs(s)["saap.step.idempotency_key"].AsString(); k == "" {
			t.Errorf("step %s has no idempotency key", name)
		}
	}

	retr, gen := tree.one("step retrieve"), tree.one("step generate")
	tree.parentOf(gen, tree.one("own work"))
	r := tree.one("RetrieverEvent")
	tree.parentOf(retr, r)
	wantAttrs(t, r, map[string]any{"openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.id": "n1"})
	tool, llm := tree.one("ToolEvent"), tree.one("LLMEvent")
	tree.parentOf(gen, tool)
	tree.parentOf(gen, llm)
	wantAttrs(t, tool, map[string]any{"openinference.span.kind": "TOOL", "tool.name": "search"})
	if v, ok := attrs(tool)["tool.json_schema"]; ok {
		t.Errorf("tool.json_schema %v for a tool without a schema, want none", v)
	}
	wantAttrs(t, llm, map[string]any{"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "llm.token_count.total": int64(12),
		"llm.input_messages.0.message.content": "capital?"})
	// Each semantic span ends at its event's created_at and starts where the
	// one before ended, the first at the step's start.
	var evTool, evLLM event.Event
	for _, e := range res.Control() {
		switch e.(type) {
		case *event.ToolEvent:
			evTool = e
		case *event.LLMEvent:
			evLLM = e
		}
	}
	if evTool == nil || evLLM == nil {
		t.Fatalf("events %v", res.Names())
	}
	if got, want := tool.EndTime().UnixNano(), evTool.EventBase().CreatedAt; got != want {
		t.Errorf("ToolEvent span ends %d, want created_at %d", got, want)
	}
	if !tool.StartTime().Equal(gen.StartTime()) {
		t.Errorf("ToolEvent span starts %v, want the step's start %v", tool.StartTime(), gen.StartTime())
	}
	if !llm.StartTime().Equal(tool.EndTime()) || llm.EndTime().UnixNano() != evLLM.EventBase().CreatedAt {
		t.Errorf("LLMEvent span %v..%v, want %v..%d", llm.StartTime(), llm.EndTime(), tool.EndTime(), evLLM.EventBase().CreatedAt)
	}
	if attrs(llm)["saap.event.id"].AsString() != evLLM.EventBase().EventID {
		t.Errorf("LLMEvent span names event %v, want %s", attrs(llm)["saap.event.id"], evLLM.EventBase().EventID)
	}

	// Metrics by agent class.
	m := collect(t, rec)
	for name, want := range map[string]int64{semantic.MetricRunsStarted: 1, semantic.MetricRunsCompleted: 1,
		semantic.MetricStepExecutions: 3} {
		if got := m.sum(name, "TracedAgent"); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if got := m.count(semantic.MetricStepDuration); got != 3 {
		t.Errorf("%d step durations, want 3", got)
	}
	if got := m.sum(semantic.MetricRunsCrashed, "TracedAgent"); got != 0 {
		t.Errorf("crashed = %d", got)
	}
}

func TestCrashedRunSpans(t *testing.T) {
	rec := newRecorder(t)
	tr := rec.tracing(semantic.WithLangfuse())
	boom := step.New(func(ctx step.Context, q *event.UserMessageEvent) (*event.StopEvent, error) {
		return nil, errors.New("database password rejected")
	}, step.Name("boom"))
	w, err := step.NewWorkflow("CrashAgent", boom)
	if err != nil {
		t.Fatal(err)
	}
	h := agenttest.New(t, w, agenttest.WithInterceptors(tr))
	res := h.Start(user())
	exc, ok := agenttest.TerminalAs[*event.ExceptionEvent](res)
	if !ok {
		t.Fatalf("terminal %v", res.Terminal())
	}
	tree := rec.tree(t)
	tree.oneTrace()
	run, s, e := tree.one("run CrashAgent"), tree.one("step boom"), tree.one("ExceptionEvent")
	tree.parentOf(s, e)
	// The step's span has the full error; statuses show only the public message.
	if s.Status().Code != codes.Error || strings.Contains(s.Status().Description, "password") {
		t.Errorf("step status %v", s.Status())
	}
	if len(s.Events()) != 1 || s.Events()[0].Name != "exception" || !strings.Contains(fmt.Sprint(s.Events()[0].Attributes), "database password rejected") {
		t.Errorf("step span events %v", s.Events())
	}
	wantAttrs(t, s, map[string]any{"saap.step.outcome": "error", "langfuse.session.id": res.Topic().Thread})
	wantAttrs(t, e, map[string]any{"openinference.span.kind": "CHAIN", "exception.type": "ExceptionEvent", "exception.message": exc.Message,
		"http.response.status_code": int64(500), "langfuse.observation.level": "ERROR"})
	if e.Status().Code != codes.Error || len(e.Events()) != 1 {
		t.Fatalf("ExceptionEvent span status %v, events %v", e.Status(), e.Events())
	}
	// The exception event names the type once, as a string.
	var types []attribute.Value
	for _, kv := range e.Events()[0].Attributes {
		if kv.Key == "exception.type" {
			types = append(types, kv.Value)
		}
	}
	if len(types) != 1 || types[0].Type() != attribute.STRING || types[0].AsString() != "ExceptionEvent" {
		t.Errorf("exception event's exception.type %v", types)
	}
	wantAttrs(t, run, map[string]any{"saap.run.outcome": "crashed", "langfuse.user.id": "user-7", "langfuse.trace.name": "CrashAgent"})
	if run.Status().Code != codes.Error || run.Status().Description != exc.Message {
		t.Errorf("run status %v, want the exception's message %q", run.Status(), exc.Message)
	}
	m := collect(t, rec)
	if m.sum(semantic.MetricRunsCrashed, "CrashAgent") != 1 || m.sum(semantic.MetricRunsCompleted, "CrashAgent") != 0 {
		t.Errorf("crashed %d, completed %d", m.sum(semantic.MetricRunsCrashed, "CrashAgent"), m.sum(semantic.MetricRunsCompleted, "CrashAgent"))
	}
}

// A HITL question is a wait; a refused event is a dead letter.
func TestWaitAndDeadLetterMetrics(t *testing.T) {
	rec := newRecorder(t)
	tr := rec.tracing()
	ask := step.New(func(ctx step.Context, q *event.UserMessageEvent) (*event.HumanInTheLoopInputRequestEvent, error) {
		return &event.HumanInTheLoopInputRequestEvent{HumanInTheLoopRequestEvent: event.HumanInTheLoopRequestEvent{
			Question: "sure?", HITLType: event.HITLInput}}, nil
	}, step.Name("ask"))
	done := step.New(func(ctx step.Context, a *event.HumanInTheLoopInputResponseEvent) (*event.StopEvent, error) {
		return &event.StopEvent{}, nil
	}, step.Name("done"))
	w, err := step.NewWorkflow("AskAgent", ask, done)
	if err != nil {
		t.Fatal(err)
	}
	h := agenttest.New(t, w, agenttest.WithInterceptors(tr))
	res := h.Start(user())
	// An answer to a question the run never asked is refused.
	stray := &event.HumanInTheLoopInputResponseEvent{Response: "yes",
		RequestEvent: &event.HumanInTheLoopInputRequestEvent{HumanInTheLoopRequestEvent: event.HumanInTheLoopRequestEvent{
			Question: "?", HITLType: event.HITLInput, Topic: &event.Topic{}}}}
	stray.RequestEvent.EventID = "000000000000000000000000"
	h.Send(res, stray)
	if len(res.DeadLetters()) != 1 {
		t.Fatalf("dead letters %v", res.DeadLetters())
	}
	m := collect(t, rec)
	if got := m.sum(semantic.MetricHITLWaits, "AskAgent"); got != 1 {
		t.Errorf("waits = %d, want 1", got)
	}
	if got := m.sum(semantic.MetricDeadLetters, "AskAgent"); got != 1 {
		t.Errorf("dead letters = %d, want 1", got)
	}
}

// metricsOf is a collected set of metrics.
type metricsOf struct{ rm metricdata.ResourceMetrics }

func collect(t *testing.T, r *recorder) metricsOf {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return metricsOf{rm}
}

func (m metricsOf) sum(name, class string) int64 {
	var n int64
	for _, sm := range m.rm.ScopeMetrics {
		for _, mm := range sm.Metrics {
			if mm.Name != name {
				continue
			}
			if s, ok := mm.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range s.DataPoints {
					if v, ok := dp.Attributes.Value("saap.agent.class"); ok && v.AsString() == class {
						n += dp.Value
					}
				}
			}
		}
	}
	return n
}

func (m metricsOf) count(name string) uint64 {
	var n uint64
	for _, sm := range m.rm.ScopeMetrics {
		for _, mm := range sm.Metrics {
			if h, ok := mm.Data.(metricdata.Histogram[float64]); ok && mm.Name == name {
				for _, dp := range h.DataPoints {
					n += dp.Count
				}
			}
		}
	}
	return n
}

// Run spans of paused runs are held within bounds: past them the oldest
// ends early, marked open, and Close ends the rest.
func TestRunSpansBounded(t *testing.T) {
	rec := newRecorder(t)
	tr := rec.tracing(semantic.WithRunSpans(1, time.Hour))
	ask := step.New(func(ctx step.Context, q *event.UserMessageEvent) (*event.HumanInTheLoopInputRequestEvent, error) {
		return &event.HumanInTheLoopInputRequestEvent{HumanInTheLoopRequestEvent: event.HumanInTheLoopRequestEvent{
			Question: "sure?", HITLType: event.HITLInput}}, nil
	}, step.Name("ask"))
	done := step.New(func(ctx step.Context, a *event.HumanInTheLoopInputResponseEvent) (*event.StopEvent, error) {
		return &event.StopEvent{}, nil
	}, step.Name("done"))
	w, err := step.NewWorkflow("PausingAgent", ask, done)
	if err != nil {
		t.Fatal(err)
	}
	h := agenttest.New(t, w, agenttest.WithInterceptors(tr))
	first := h.Start(user())
	runSpans := func() []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range rec.spans.Ended() {
			if s.Name() == "run PausingAgent" {
				out = append(out, s)
			}
		}
		return out
	}
	if n := len(runSpans()); n != 0 {
		t.Fatalf("%d run spans ended while the run waits", n)
	}
	second := h.Start(user())
	ended := runSpans()
	if len(ended) != 1 || attrs(ended[0])["saap.run.id"].AsString() != first.RunID() || !attrs(ended[0])["saap.run.open"].AsBool() {
		t.Fatalf("after a second paused run: run spans %v, want the first one's, marked open", ended)
	}
	tr.Close()
	ended = runSpans()
	if len(ended) != 2 || attrs(ended[1])["saap.run.id"].AsString() != second.RunID() || !attrs(ended[1])["saap.run.open"].AsBool() {
		t.Fatalf("after Close: run spans %v", ended)
	}
}

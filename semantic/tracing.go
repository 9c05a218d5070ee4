package semantic

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/saap-go/agent/interceptor"
	"github.com/saap-go/agent/store"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// ScopeName is the instrumentation scope of the spans and metrics.
const ScopeName = "github.com/saap-go/agent/semantic"

// Version is the instrumentation scope's version.
const Version = "0.1.0"

// Tracing turns an engine's work into OpenInference spans and OTel
// metrics. Install it with EngineOptions (the agent runtime does). It is
// safe for concurrent use by several engines.
type Tracing struct {
	interceptor.Base // Executed and Dropped: nothing to trace
	tracer           trace.Tracer
	tracing          bool // the provider is not a no-op one
	langfuse         bool
	m                *metrics // nil: metrics off
	runs             *openRuns
}

// Option configures Tracing.
type Option func(*config)

type config struct {
	tp       trace.TracerProvider
	mp       metric.MeterProvider
	langfuse bool
	maxRuns  int
	maxAge   time.Duration
}

// WithTracerProvider sets where spans go (default the global provider).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithMeterProvider sets where metrics go (default the global provider).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithLangfuse adds the langfuse.* attributes Langfuse reads: trace name,
// session and user on the run span, observation types on the semantic
// spans, model and token usage on LLM spans.
func WithLangfuse() Option { return func(c *config) { c.langfuse = true } }

// WithRunSpans bounds the run spans kept open until their run ends
// (default 10 000, at most 10 minutes each). A run span still open past
// either bound ends early, marked saap.run.open: its run went on.
func WithRunSpans(max int, maxAge time.Duration) Option {
	return func(c *config) { c.maxRuns, c.maxAge = max, maxAge }
}

// New returns Tracing with the given options. With no-op providers it
// does nothing at all.
func New(opts ...Option) *Tracing {
	c := config{maxRuns: 10000, maxAge: 10 * time.Minute}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	t := &Tracing{
		tracer:   c.tp.Tracer(ScopeName, trace.WithInstrumentationVersion(Version)),
		tracing:  !isNoopTracing(c.tp),
		langfuse: c.langfuse,
		runs:     newOpenRuns(max(c.maxRuns, 1), c.maxAge),
	}
	if !isNoopMetrics(c.mp) {
		t.m = newMetrics(c.mp.Meter(ScopeName, metric.WithInstrumentationVersion(Version)))
	}
	return t
}

func isNoopTracing(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case tracenoop.TracerProvider, *tracenoop.TracerProvider:
		return true
	}
	return false
}

func isNoopMetrics(mp metric.MeterProvider) bool {
	switch mp.(type) {
	case metricnoop.MeterProvider, *metricnoop.MeterProvider:
		return true
	}
	return false
}

// Tracer is the tracer t starts its spans with.
func (t *Tracing) Tracer() trace.Tracer { return t.tracer }

// Close ends the run spans still open (their runs go on elsewhere or
// later). Call it when the engines using t stop, before the tracer
// provider shuts down.
func (t *Tracing) Close() { t.runs.closeAll() }

var _ interceptor.Interceptor = (*Tracing)(nil)

// Span and attribute names.
const (
	attrClass      = "saap.agent.class"
	attrAgentID    = "saap.agent.id"
	attrThread     = "saap.thread.id"
	attrRun        = "saap.run.id"
	attrSession    = "session.id"
	attrUser       = "user.id"
	attrStep       = "saap.step.name"
	attrTrigger    = "saap.step.trigger"
	attrTriggerID  = "saap.step.trigger_id"
	attrAttempt    = "saap.step.attempt"
	attrIdemKey    = "saap.step.idempotency_key"
	attrRerun      = "saap.step.rerun"
	attrOutcome    = "saap.step.outcome"
	attrEventName  = "saap.event.name"
	attrEventID    = "saap.event.id"
	attrRunOpen    = "saap.run.open"
	attrRunOutcome = "saap.run.outcome"
)

// Outcomes of steps and runs.
const (
	OutcomeOK        = "ok"
	OutcomeError     = "error"
	OutcomeCompleted = "completed"
	OutcomeCrashed   = "crashed"
)

// The run span's context travels in the W3C trace state under this key, as
// "<span id>-<run digest>" entries joined by ".", the newest run first
// (a delegate's callers follow it), so every hop of the run, on any replica, can
// parent its spans to the run span without shared state.
const stateKey = "saap"

type ctxKey struct{}

// handling is what a delivery's context carries for the step spans.
type handling struct {
	attempt uint64
}

func nopDeliver(error)               {}
func nopStep(interceptor.StepResult) {}
func (t *Tracing) off() bool         { return !t.tracing && t.m == nil }
func runKey(tp topic.Agent) store.RunKey {
	return store.RunKey{Class: tp.Class, Run: tp.Run}
}

// Deliver starts the run span for a StartEvent, or puts a later event's
// handling under the run span its trace state names.
func (t *Tracing) Deliver(ctx context.Context, d interceptor.Delivery) (context.Context, func(error)) {
	if t.off() {
		return ctx, nopDeliver
	}
	ctx, done := t.deliver(ctx, d) // apart, so that the path above allocates nothing
	if !t.tracing {
		return ctx, done
	}
	ctx, end := t.consumerSpans(ctx, d)
	return ctx, func(err error) {
		end(err)
		done(err)
	}
}

// consumerSpans starts the reference's consumer span "<consumer>.receive
// <event>" and its child "<consumer>.process <event>" under the run span;
// end closes both.
// chainKind is set after the start: a start option costs a copy of it.
var chainKind = attribute.String(SpanKindKey, KindChain)

func (t *Tracing) consumerSpans(ctx context.Context, d interceptor.Delivery) (context.Context, func(error)) {
	name := event.Name(d.Event)
	subject, _ := d.Topic.Subject()
	attrs := []attribute.KeyValue{
		attribute.String(SpanKindKey, KindChain),
		attribute.String("messaging.system", "nats.jetstream"),
		attribute.String("messaging.source", subject),
		attribute.String("messaging.operation", "receive"),
		attribute.String("event.type", string(topic.Control)),
		attribute.String("event.class", name),
		attribute.Int64("jetstream.sequence", int64(d.Seq)),
		attribute.String("jetstream.stream", d.Stream),
		attribute.Int64("jetstream.delivery_count", int64(d.NumDelivered)),
		attribute.String("jetstream.queue_group", d.Consumer),
	}
	ctx, recv := t.tracer.Start(ctx, d.Consumer+".receive "+name,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
	ctx, proc := t.tracer.Start(ctx, d.Consumer+".process "+name, trace.WithSpanKind(trace.SpanKindInternal))
	proc.SetAttributes(chainKind)
	return ctx, func(err error) {
		if err != nil {
			proc.RecordError(err)
			proc.SetStatus(codes.Error, err.Error())
		}
		proc.End()
		recv.End()
	}
}

func (t *Tracing) deliver(ctx context.Context, d interceptor.Delivery) (context.Context, func(error)) {
	ctx = context.WithValue(ctx, ctxKey{}, &handling{attempt: d.NumDelivered})
	start := event.IsStart(d.Event)
	if !t.tracing {
		if !start {
			return ctx, nopDeliver
		}
		return ctx, func(err error) {
			if err == nil {
				t.m.runStarted(ctx, d.Topic.Class)
			}
		}
	}
	if !start {
		sc := trace.SpanContextFromContext(ctx)
		if id, ok := runSpanOf(sc.TraceState(), d.Topic); ok {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc.WithSpanID(id))
		}
		return ctx, nopDeliver
	}
	ctx, span := t.tracer.Start(ctx, "run "+d.Topic.Class,
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(t.runAttrs(d)...))
	if sc := span.SpanContext(); sc.IsValid() {
		if ts, err := sc.TraceState().Insert(stateKey, stateValue(sc.TraceState(), sc.SpanID(), d.Topic)); err == nil {
			ctx = trace.ContextWithSpanContext(ctx, sc.WithTraceState(ts))
		}
	}
	key := runKey(d.Topic)
	t.runs.put(key, span)
	return ctx, func(err error) {
		if err == nil {
			if t.m != nil {
				t.m.runStarted(ctx, d.Topic.Class)
			}
			return
		}
		// This attempt did not start the run; a redelivery makes another.
		if s := t.runs.take(key); s != nil {
			s.RecordError(err)
			s.SetStatus(codes.Error, err.Error())
			s.End()
		}
	}
}

func (t *Tracing) runAttrs(d interceptor.Delivery) []attribute.KeyValue {
	tp := d.Topic
	as := []attribute.KeyValue{
		attribute.String(SpanKindKey, KindAgent),
		attribute.String(attrClass, tp.Class),
		attribute.String(attrAgentID, tp.ID),
		attribute.String(attrThread, tp.Thread),
		attribute.String(attrSession, tp.Thread),
		attribute.String(attrRun, tp.Run),
		attribute.String(attrEventName, event.Name(d.Event)),
		attribute.String(attrEventID, d.Event.EventBase().EventID),
	}
	user := ""
	if um := find[event.UserMessageEvent](d.Event); um != nil {
		if um.User != nil {
			user = um.User.ID
			as = append(as, attribute.String(attrUser, user))
		}
		if in := userText(um); in != "" {
			as = append(as, attribute.String("input.value", in), attribute.String("input.mime_type", "text/plain"))
		}
	}
	if t.langfuse {
		as = append(as,
			attribute.String("langfuse.trace.name", tp.Class),
			attribute.String("langfuse.session.id", tp.Thread),
			attribute.String("langfuse.trace.metadata.agent_class", tp.Class),
			attribute.String("langfuse.trace.metadata.agent_id", tp.ID),
			attribute.String("langfuse.trace.metadata.run_id", tp.Run),
			attribute.String("langfuse.observation.type", "agent"),
		)
		if user != "" {
			as = append(as, attribute.String("langfuse.user.id", user))
		}
	}
	return as
}

// runDigest names a run in the trace state: an answer that comes back from
// another run (a delegate's) carries that run's span, which must not be
// taken for this run's.
func runDigest(tp topic.Agent) string {
	sum := sha256.Sum256([]byte(tp.Class + "\x00" + tp.Run))
	return hex.EncodeToString(sum[:4])
}

// maxRunsInState bounds the runs the trace state names: a delegation
// chain deeper than this loses its outermost runs' spans.
const maxRunsInState = 8

// stateValue names the run span of tp first, then the runs ts names
// already (the callers of a delegated run), so that an answer coming back
// from a delegate finds its caller's run span.
func stateValue(ts trace.TraceState, span trace.SpanID, tp topic.Agent) string {
	digest := runDigest(tp)
	entries := []string{span.String() + "-" + digest}
	for e := range strings.SplitSeq(ts.Get(stateKey), ".") {
		if len(entries) == maxRunsInState {
			break
		}
		if _, d, ok := strings.Cut(e, "-"); ok && d != digest {
			entries = append(entries, e)
		}
	}
	return strings.Join(entries, ".")
}

// runSpanOf reads the run span id of the run of tp from a trace state.
func runSpanOf(ts trace.TraceState, tp topic.Agent) (trace.SpanID, bool) {
	v := ts.Get(stateKey)
	if v == "" {
		return trace.SpanID{}, false
	}
	digest := runDigest(tp)
	for e := range strings.SplitSeq(v, ".") {
		if id, d, ok := strings.Cut(e, "-"); ok && d == digest {
			sid, err := trace.SpanIDFromHex(id)
			return sid, err == nil
		}
	}
	return trace.SpanID{}, false
}

// Step starts the span of a step execution; done adds a span per semantic
// event the step published, ends the step's span and records the metrics.
func (t *Tracing) Step(ctx context.Context, s interceptor.Step) (context.Context, func(interceptor.StepResult)) {
	if t.off() {
		return ctx, nopStep
	}
	return t.step(ctx, s)
}

func (t *Tracing) step(ctx context.Context, s interceptor.Step) (context.Context, func(interceptor.StepResult)) {
	start := time.Now()
	var attempt uint64
	if h, ok := ctx.Value(ctxKey{}).(*handling); ok {
		attempt = h.attempt
	}
	var span trace.Span
	if t.tracing {
		ctx, span = t.tracer.Start(ctx, "step "+s.Name, trace.WithTimestamp(start),
			trace.WithAttributes(t.stepAttrs(s, attempt)...))
	}
	return ctx, func(r interceptor.StepResult) {
		outcome := OutcomeOK
		if r.Err != nil {
			outcome = OutcomeError
		}
		if span != nil {
			t.endStep(ctx, span, start, r, outcome)
		}
		if t.m != nil {
			t.m.stepDone(ctx, s, outcome, time.Since(start), r.Outputs)
		}
	}
}

func (t *Tracing) stepAttrs(s interceptor.Step, attempt uint64) []attribute.KeyValue {
	run := s.Context.Run()
	as := []attribute.KeyValue{
		attribute.String(SpanKindKey, KindChain),
		attribute.String(attrClass, run.Class),
		attribute.String(attrRun, run.RunID),
		attribute.String(attrSession, run.ThreadID),
		attribute.String(attrStep, s.Name),
		attribute.String(attrIdemKey, s.Context.IdempotencyKey()),
		attribute.Bool(attrRerun, s.Rerun),
		attribute.Int64(attrAttempt, int64(attempt)),
	}
	if tr := run.Trigger; tr != nil {
		as = append(as, attribute.String(attrTrigger, event.Name(tr)), attribute.String(attrTriggerID, tr.EventBase().EventID))
	}
	if t.langfuse {
		as = append(as, attribute.String("langfuse.session.id", run.ThreadID), attribute.String("langfuse.observation.type", "chain"))
	}
	return as
}

func (t *Tracing) endStep(ctx context.Context, span trace.Span, start time.Time, r interceptor.StepResult, outcome string) {
	// A semantic event's span runs from the end of the one before (the
	// step's start for the first) to the event's created_at.
	prev := start
	for _, o := range r.Outputs {
		if event.Has(o, aitlRequest) {
			continue // its delegate span went out with it (Publish)
		}
		if !event.IsSemantic(o) {
			continue
		}
		end := time.Unix(0, o.EventBase().CreatedAt)
		if o.EventBase().CreatedAt == 0 {
			end = time.Now()
		}
		from := prev
		if end.Before(from) {
			from = end
		}
		if start, stop, ok := callTimes(o); ok {
			from, end = start, stop // the call's own times: parallel calls and guards overlap
		}
		as, _ := Attributes(o) // a bare SemanticEvent has none: its span still shows it happened
		as = append(as, attribute.String(attrEventName, event.Name(o)), attribute.String(attrEventID, o.EventBase().EventID))
		if t.langfuse {
			as = append(as, langfuseAttrs(o)...)
		}
		_, es := t.tracer.Start(ctx, event.Name(o), trace.WithTimestamp(from), trace.WithAttributes(as...))
		if exc := find[event.ExceptionEvent](o); exc != nil {
			// AddEvent, not RecordError: that would add the Go error's type.
			es.AddEvent("exception", trace.WithTimestamp(end), trace.WithAttributes(
				attribute.String("exception.type", exceptionType(o)), attribute.String("exception.message", exc.Message)))
			es.SetStatus(codes.Error, exc.Message)
		} else if msg, ok := toolError(o); ok {
			es.AddEvent("exception", trace.WithTimestamp(end), trace.WithAttributes(
				attribute.String("exception.type", "ToolError"), attribute.String("exception.message", msg)))
			es.SetStatus(codes.Error, msg)
		}
		es.End(trace.WithTimestamp(end))
		if end.After(prev) {
			prev = end
		}
	}
	span.SetAttributes(attribute.String(attrOutcome, outcome))
	if r.Err != nil {
		as := []attribute.KeyValue{attribute.String("error.reference", r.Reference)}
		var pe *step.PanicError
		if errors.As(r.Err, &pe) {
			as = append(as, attribute.String("exception.stacktrace", string(pe.Stack)))
		}
		span.RecordError(r.Err, trace.WithAttributes(as...))
		msg, ok := step.UserMessage(r.Err)
		if !ok {
			msg = "the agent failed; reference " + r.Reference
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}

// callTimes are when a tool call or a guard's check started and ended: the
// members "started_at" and "ended_at" of its ToolEvent or guard event, in
// Unix nanoseconds.
func callTimes(o event.Event) (start, end time.Time, ok bool) {
	if find[event.ToolEvent](o) == nil && find[event.GuardEvent](o) == nil {
		return start, end, false
	}
	var s, e int64
	rs, ok1 := event.Extra(o, "started_at")
	re, ok2 := event.Extra(o, "ended_at")
	if !ok1 || !ok2 || json.Unmarshal(rs, &s) != nil || json.Unmarshal(re, &e) != nil || s <= 0 || e < s {
		return start, end, false
	}
	return time.Unix(0, s), time.Unix(0, e), true
}

// toolError is the error of a failed tool call: the member "error" of
// its ToolEvent.
func toolError(o event.Event) (string, bool) {
	if find[event.ToolEvent](o) == nil {
		return "", false
	}
	raw, ok := event.Extra(o, "error")
	if !ok || isNull(raw) {
		return "", false
	}
	var msg string
	if json.Unmarshal(raw, &msg) != nil {
		msg = string(raw) // not a string: the JSON shows what went wrong
	}
	return msg, true
}

var _ interceptor.Publisher = (*Tracing)(nil)

const aitlRequest = "AgentInTheLoopRequestEvent"

// Publish starts the delegate span of an AITL request the step publishes,
// under the step's span: the request carries it, so the delegate's run
// hangs under it. Other events are published as they are.
func (t *Tracing) Publish(ctx context.Context, ev event.Event) (context.Context, func(error)) {
	if !t.tracing {
		return ctx, nopDeliver
	}
	// Has first: a lookup, where find walks the type on every output.
	if !event.Has(ev, aitlRequest) {
		return ctx, nopDeliver
	}
	req := find[event.AgentInTheLoopRequestEvent](ev)
	if req == nil {
		return ctx, nopDeliver
	}
	ctx, span := t.delegation(ctx, req, ev)
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// delegation starts the span of the delegation an AITL request starts: a
// producer span under the step. The delegate's run continues the same
// trace, under it.
func (t *Tracing) delegation(ctx context.Context, req *event.AgentInTheLoopRequestEvent, o event.Event) (context.Context, trace.Span) {
	target := ""
	as := []attribute.KeyValue{attribute.String(SpanKindKey, KindAgent), attribute.String(attrEventID, o.EventBase().EventID)}
	if tp := req.OtherAgentTopic; tp != nil {
		if tp.AgentClass != nil {
			target = *tp.AgentClass
			as = append(as, attribute.String("saap.delegate.class", target))
		}
		if tp.AgentID != nil {
			as = append(as, attribute.String("saap.delegate.agent_id", *tp.AgentID))
		}
	}
	if req.TimeoutSeconds != nil {
		as = append(as, attribute.Float64("saap.delegate.timeout_seconds", *req.TimeoutSeconds))
	}
	return t.tracer.Start(ctx, "delegate "+target, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(as...))
}

// langfuseAttrs are the observation attributes of a semantic event.
func langfuseAttrs(o event.Event) []attribute.KeyValue {
	var as []attribute.KeyValue
	if exc := find[event.ExceptionEvent](o); exc != nil {
		return append(as, attribute.String("langfuse.observation.level", "ERROR"),
			attribute.String("langfuse.observation.status_message", exc.Message))
	}
	if l := find[event.LLMEvent](o); l != nil {
		as = append(as, attribute.String("langfuse.observation.type", "generation"))
		if l.ChatModelName != nil {
			as = append(as, attribute.String("langfuse.observation.model.name", *l.ChatModelName))
		}
		var usage []string
		for _, u := range []struct {
			k string
			v *int64
		}{{"input", l.TokenCountPrompt}, {"output", l.TokenCountCompletion}, {"total", l.TokenCountTotal}} {
			if u.v != nil {
				usage = append(usage, strconv.Quote(u.k)+": "+strconv.FormatInt(*u.v, 10))
			}
		}
		if usage != nil {
			as = append(as, attribute.String("langfuse.observation.usage_details", "{"+strings.Join(usage, ", ")+"}"))
		}
		return as
	}
	types := []struct {
		has func(event.Event) bool
		typ string
	}{
		{func(e event.Event) bool { return find[event.ToolEvent](e) != nil }, "tool"},
		{func(e event.Event) bool { return find[event.ChainEvent](e) != nil }, "chain"},
		{func(e event.Event) bool { return find[event.AgentEvent](e) != nil }, "agent"},
		{func(e event.Event) bool { return find[event.RetrieverEvent](e) != nil }, "retriever"},
		{func(e event.Event) bool { return find[event.EmbeddingEvent](e) != nil }, "embedding"},
		{func(e event.Event) bool { return find[event.GuardEvent](e) != nil }, "guardrail"},
	}
	for _, ty := range types {
		if ty.has(o) {
			return append(as, attribute.String("langfuse.observation.type", ty.typ))
		}
	}
	return append(as, attribute.String("langfuse.observation.type", "span"))
}

// Ended ends the run span, if this process holds it, and counts the run.
func (t *Tracing) Ended(ctx context.Context, td interceptor.End) {
	if t.off() || td.Duplicate {
		return
	}
	terminal := td.Terminal
	crashed := td.Marker == interceptor.Crashed
	if t.m != nil {
		t.m.runEnded(ctx, td.Run.Class, crashed)
	}
	span := t.runs.take(runKey(td.Run))
	if span == nil {
		return
	}
	outcome := OutcomeCompleted
	if crashed {
		outcome = OutcomeCrashed
		msg, typ := "the run crashed", "RunCrashed"
		if exc := find[event.ExceptionEvent](terminal); exc != nil {
			msg, typ = exc.Message, exceptionType(terminal)
		}
		// An Error status without an exception event shows no cause.
		span.AddEvent("exception", trace.WithAttributes(
			attribute.String("exception.type", typ), attribute.String("exception.message", msg)))
		span.SetStatus(codes.Error, msg)
	}
	span.SetAttributes(attribute.String(attrRunOutcome, outcome))
	if out, ok := runOutput(terminal); ok {
		span.SetAttributes(attribute.String("output.value", out), attribute.String("output.mime_type", "text/plain"))
	}
	span.End()
}

// userText is the text of the user's last message: the run's input.
func userText(um *event.UserMessageEvent) string {
	for i := len(um.Messages) - 1; i >= 0; i-- {
		if um.Messages[i].Role == event.RoleUser {
			return um.Messages[i].Content()
		}
	}
	return ""
}

// runOutput is the content of the stop event that ended a run: an LLM
// stop's last assistant message, else the event's member "content".
func runOutput(terminal event.Event) (string, bool) {
	if terminal == nil || find[event.ExceptionEvent](terminal) != nil {
		return "", false
	}
	if l := find[event.LLMEvent](terminal); l != nil {
		for i := len(l.OutputMessages) - 1; i >= 0; i-- {
			if m := l.OutputMessages[i]; m.Role == event.RoleAssistant {
				var b strings.Builder
				for _, c := range m.Contents {
					if c.Type == "text" {
						b.WriteString(c.Text)
					}
				}
				return b.String(), true
			}
		}
		return "", false
	}
	return contentOf(terminal)
}

// DeadLettered counts a dead letter.
func (t *Tracing) DeadLettered(ctx context.Context, subject, reason string) {
	if t.m == nil {
		return
	}
	class := ""
	if tp, err := topic.ParseAgent(subject); err == nil {
		class = tp.Class
	}
	t.m.deadLetter(ctx, class)
	trace.SpanFromContext(ctx).AddEvent("dead letter", trace.WithAttributes(attribute.String("reason", reason)))
}

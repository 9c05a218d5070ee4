package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/internal/runloop"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Agent-in-the-loop delegation, durable on both legs:
//
//   - the AITL requests the class's runs publish are read back from the
//     class's own stream by a durable consumer (aitl_requests_<Class>), which
//     starts each delegate run by JetStream as the reference does. A crash
//     before the start event is out leaves the request unacknowledged, so it
//     is started again, under the same ids.
//   - the delegate's first stop or exception is read from the delegate class's
//     stream by one durable consumer per delegate class
//     (aitl_<Class>_<DelegateClass>), which maps the delegate run back to the
//     caller's question through the state store and publishes the outcome
//     into the caller's run under an id derived from the request, so a
//     redelivery publishes the same event again.
//
// No goroutine or timer exists per waiting run; the consumers are shared by
// all replicas of the class.

const (
	aitlRequestName = "AgentInTheLoopRequestEvent"
	// Thread-scope ids of the caller class's delegation state: the delegate
	// classes it has delegated to (their consumers are resumed at start),
	// and the open delegations by delegate class and run.
	aitlClassesScope = "_aitl_classes"
	aitlRunsScope    = "_aitl_runs"
)

func aitlRequestsConsumer(class string) string { return "aitl_requests_" + class }
func aitlAnswersConsumer(caller, delegate string) string {
	return "aitl_" + caller + "_" + delegate
}

// delegates reports whether a step of w can return an AITL request, so the
// runner needs the delegation consumers.
func delegates(w *step.Workflow) bool {
	for _, s := range w.Steps() {
		for _, name := range s.Outputs() {
			if name == aitlRequestName {
				return true
			}
			if t, ok := event.Lookup(name); ok && slices.Contains(t.Parents, aitlRequestName) {
				return true
			}
		}
	}
	return false
}

// delegation is what the caller's class records for one delegate run: the
// question it answers and where the answer goes.
type delegation struct {
	RequestID string `json:"request_event_id"`
	Class     string `json:"agent_class"`
	AgentID   string `json:"agent_id"`
	Thread    string `json:"thread_id"`
	Display   string `json:"display_id"`
	Run       string `json:"run_id"`
}

func (d delegation) topic() topic.Agent {
	return topic.Agent{Class: d.Class, ID: d.AgentID, Thread: d.Thread, Display: d.Display, Run: d.Run}
}

// delegator runs the delegation consumers of one caller class.
type delegator struct {
	class string
	b     bus.Bus
	store store.Store
	log   *slog.Logger
	ctx   context.Context // bounds set-ups started from handlers; cancelled by stop

	mu      sync.Mutex
	stopped bool
	answers map[string]bus.Consumer // by delegate class
	reqs    bus.Consumer
	cancel  context.CancelFunc
}

// startDelegator starts the request consumer and resumes the answer
// consumers of every delegate class the caller class has delegated to.
func startDelegator(ctx context.Context, class string, b bus.Bus, s store.Store, log *slog.Logger) (*delegator, error) {
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d := &delegator{class: class, b: b, store: s, log: log, ctx: dctx, cancel: cancel, answers: map[string]bus.Consumer{}}
	classes, err := s.Keys(ctx, store.ThreadContext(class, aitlClassesScope))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("agent: delegate classes of %s: %w", class, err)
	}
	for _, dc := range classes {
		if err := d.watch(ctx, dc); err != nil {
			d.stop()
			return nil, err
		}
	}
	filter, err := topic.AgentPattern{Class: class, Type: topic.Control, Name: aitlRequestName}.Subject()
	if err != nil {
		d.stop()
		return nil, fmt.Errorf("agent: delegation requests of %s: %w", class, err)
	}
	cfg := bus.ConsumerConfig{
		Stream:        topic.StreamName(class),
		Durable:       aitlRequestsConsumer(class),
		FilterSubject: filter,
		MaxDeliver:    -1,
	}
	if err := runloop.DeliverNew(ctx, b, cfg); err != nil {
		d.stop()
		return nil, fmt.Errorf("agent: %w", err)
	}
	c, err := b.Consume(ctx, cfg, d.handleRequest)
	if err != nil {
		d.stop()
		return nil, fmt.Errorf("agent: consumer %s: %w", cfg.Durable, err)
	}
	d.mu.Lock()
	d.reqs = c
	d.mu.Unlock()
	return d, nil
}

// stop stops all consumers; deliveries in hand are redelivered later.
func (d *delegator) stop() {
	d.mu.Lock()
	d.stopped = true
	cs := make([]bus.Consumer, 0, len(d.answers)+1)
	if d.reqs != nil {
		cs = append(cs, d.reqs)
	}
	for _, c := range d.answers {
		cs = append(cs, c)
	}
	d.mu.Unlock()
	d.cancel()
	for _, c := range cs {
		if err := c.Stop(); err != nil {
			d.log.Warn("agent: stopping a delegation consumer", "error", err)
		}
	}
}

// watch starts the answer consumer on delegate class dc unless it runs.
func (d *delegator) watch(ctx context.Context, dc string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return errors.New("agent: delegation stopped")
	}
	if _, ok := d.answers[dc]; ok {
		return nil
	}
	if err := d.b.EnsureStream(ctx, bus.AgentStream(dc)); err != nil {
		return fmt.Errorf("agent: stream of delegate class %s: %w", dc, err)
	}
	filter, err := topic.ClassControl(dc)
	if err != nil {
		return fmt.Errorf("agent: delegate class %s: %w", dc, err)
	}
	cfg := bus.ConsumerConfig{
		Stream:        topic.StreamName(dc),
		Durable:       aitlAnswersConsumer(d.class, dc),
		FilterSubject: filter,
		MaxDeliver:    -1,
	}
	if err := runloop.DeliverNew(ctx, d.b, cfg); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	c, err := d.b.Consume(ctx, cfg, func(del bus.Delivery) { d.handleAnswer(dc, del) })
	if err != nil {
		return fmt.Errorf("agent: consumer %s: %w", cfg.Durable, err)
	}
	d.answers[dc] = c
	return nil
}

// derivedID is an ObjectId-shaped id derived from a request id, so every
// delivery of one request chooses the same ids.
func derivedID(requestID, purpose string) string {
	h := sha256.Sum256([]byte("aitl\x00" + purpose + "\x00" + requestID))
	return hex.EncodeToString(h[:12])
}

// retry hands a delivery back for a later attempt.
func (d *delegator) retry(del bus.Delivery, what string, err error) {
	runloop.Retry(d.log, "agent: delegation", del, what, err)
}

func (d *delegator) reject(del bus.Delivery, reason string) {
	runloop.Reject(d.ctx, d.log, "agent: delegation", del, reason)
}

func (d *delegator) ack(del bus.Delivery) {
	runloop.Ack(d.ctx, d.log, "agent: delegation", del)
}

// handleRequest starts the delegate run of one AITL request.
func (d *delegator) handleRequest(del bus.Delivery) {
	m := del.Msg()
	caller, err := topic.ParseAgent(m.Subject)
	if err != nil {
		d.reject(del, fmt.Sprintf("subject: %v", err))
		return
	}
	ev, err := event.Unmarshal(m.Data)
	if err != nil {
		d.reject(del, fmt.Sprintf("AgentInTheLoopRequestEvent does not decode: %v", err))
		return
	}
	req, ok := ev.(*event.AgentInTheLoopRequestEvent)
	if !ok {
		d.reject(del, fmt.Sprintf("%s is not an AgentInTheLoopRequestEvent", event.Name(ev)))
		return
	}
	dt, err := hitl.DelegateTopic(caller, req)
	if err != nil {
		d.fail(del, caller, req, err.Error())
		return
	}
	ctx := bus.ExtractTrace(d.ctx, m.Header) // the delegate's run continues the caller's trace
	// A caller that ended (cancelled, say) before its request got here
	// starts no delegate: nobody would take the answer, and its cancel
	// found no delegate run to stop.
	if end, ended, err := engine.RunEnd(ctx, d.store, store.RunKey{Class: caller.Class, Run: caller.Run}); err != nil {
		d.retry(del, "read the caller run's end", err)
		return
	} else if ended {
		d.log.Info("agent: delegation of an ended run not started", "run_id", caller.Run, "run_end", end,
			"request_event_id", req.EventID, "delegate_class", dt.Class)
		d.ack(del)
		return
	}
	rec, err := json.Marshal(delegation{RequestID: req.EventID, Class: caller.Class, AgentID: caller.ID,
		Thread: caller.Thread, Display: caller.Display, Run: caller.Run})
	if err != nil {
		d.reject(del, fmt.Sprintf("encode delegation: %v", err))
		return
	}
	if err := d.store.Set(ctx, store.ThreadContext(d.class, aitlClassesScope), dt.Class, []byte("1")); err != nil {
		d.retry(del, "record the delegate class", err)
		return
	}
	if err := d.watch(ctx, dt.Class); err != nil {
		d.retry(del, "watch the delegate class", err)
		return
	}
	if err := d.store.Set(ctx, store.ThreadContext(d.class, aitlRunsScope), dt.Class+"."+dt.Run, rec); err != nil {
		d.retry(del, "record the delegation", err)
		return
	}
	start := event.Clone(req.StartEvent)
	if start.EventBase().EventID == "" {
		start.EventBase().EventID = derivedID(req.EventID, "start")
	}
	if start.EventBase().CreatedAt == 0 {
		start.EventBase().CreatedAt = time.Now().UnixNano()
	}
	data, err := event.Marshal(start)
	if err != nil {
		d.fail(del, caller, req, fmt.Sprintf("encode the start event: %v", err))
		return
	}
	subj, err := dt.Subject()
	if err != nil {
		d.fail(del, caller, req, err.Error())
		return
	}
	// No X-AIHub-* headers go with it, as with the reference: the delegate
	// fetches its own configuration. The trace context does.
	if _, err := d.b.PublishStream(ctx, &bus.Msg{Subject: subj, Data: data}, dt.EventID); err != nil {
		d.retry(del, "publish the delegate's start event", err)
		return
	}
	d.log.Info("agent: delegated", "run_id", caller.Run, "request_event_id", req.EventID,
		"delegate_class", dt.Class, "delegate_agent_id", dt.ID, "delegate_run_id", dt.Run)
	d.ack(del)
}

// fail answers a request that cannot be delegated with an
// AgentInTheLoopExceptionEvent in the caller's run, so the run does not
// wait for a delegate that never starts.
func (d *delegator) fail(del bus.Delivery, caller topic.Agent, req *event.AgentInTheLoopRequestEvent, reason string) {
	if req.EventID == "" {
		d.reject(del, reason)
		return
	}
	d.log.Error("agent: delegation failed", "run_id", caller.Run, "request_event_id", req.EventID, "reason", reason)
	exc := &event.ExceptionEvent{Message: "delegation failed: " + reason, HTTPStatusCode: 500}
	exc.EventID = derivedID(req.EventID, "failure")
	exc.CreatedAt = time.Now().UnixNano()
	out := &event.AgentInTheLoopExceptionEvent{ExceptionEvent: exc, RequestEventID: req.EventID}
	out.EventID = derivedID(req.EventID, "outcome")
	out.CreatedAt = exc.CreatedAt
	t := topic.Agent{Class: caller.Class, ID: caller.ID, Thread: caller.Thread, Display: caller.Display, Run: caller.Run}
	if _, err := bus.PublishEvent(bus.ExtractTrace(d.ctx, del.Msg().Header), d.b, t, out, nil); err != nil {
		d.retry(del, "publish the failed delegation", err)
		return
	}
	d.ack(del)
}

// handleAnswer brings a delegate run's first stop or exception back into
// the caller's run.
func (d *delegator) handleAnswer(dc string, del bus.Delivery) {
	m := del.Msg()
	t, err := topic.ParseAgent(m.Subject)
	if err != nil {
		d.ack(del)
		return
	}
	if typ, ok := event.Lookup(t.Name); ok && !slices.Contains(typ.Parents, "StopEvent") && !slices.Contains(typ.Parents, "ExceptionEvent") {
		d.ack(del) // a known type that ends no run: not worth decoding
		return
	}
	ev, err := event.Unmarshal(m.Data)
	if err != nil || (!event.IsStop(ev) && !event.IsException(ev)) {
		d.ack(del) // not an outcome, or not one to judge here
		return
	}
	ctx := bus.ExtractTrace(d.ctx, m.Header)
	runs := store.ThreadContext(d.class, aitlRunsScope)
	key := dc + "." + t.Run
	raw, ok, err := d.store.Get(ctx, runs, key)
	if err != nil {
		d.retry(del, "read the delegation", err)
		return
	}
	if !ok {
		d.ack(del) // not a run this class delegated, or answered already
		return
	}
	var rec delegation
	if err := json.Unmarshal(raw, &rec); err != nil {
		d.log.Error("agent: delegation record does not decode; dropped", "delegate_class", dc, "delegate_run_id", t.Run, "error", err)
		_ = d.store.Delete(ctx, runs, key)
		d.ack(del)
		return
	}
	callerRun := store.RunKey{Class: rec.Class, Run: rec.Run}
	by, answered, err := engine.Answered(ctx, d.store, callerRun, rec.RequestID)
	if err != nil {
		d.retry(del, "read the question's outcome", err)
		return
	}
	end, ended, err := engine.RunEnd(ctx, d.store, callerRun)
	if err != nil {
		d.retry(del, "read the caller run's end", err)
		return
	}
	if ended && !answered {
		d.log.Info("agent: delegate answered after the caller's run ended; dropped", "run_id", rec.Run,
			"run_end", end, "request_event_id", rec.RequestID, "delegate_class", dc, "delegate_run_id", t.Run)
	} else if answered && by != derivedID(rec.RequestID, "outcome") {
		d.log.Info("agent: delegate answered after the question had its outcome; dropped",
			"run_id", rec.Run, "request_event_id", rec.RequestID, "outcome_event_id", by,
			"delegate_class", dc, "delegate_run_id", t.Run, "event", event.Name(ev))
	} else {
		var out event.Event
		if event.IsStop(ev) {
			out = &event.AgentInTheLoopResponseEvent{StopEvent: ev, RequestEventID: rec.RequestID}
		} else {
			out = &event.AgentInTheLoopExceptionEvent{ExceptionEvent: ev, RequestEventID: rec.RequestID}
		}
		out.EventBase().EventID = derivedID(rec.RequestID, "outcome")
		out.EventBase().CreatedAt = time.Now().UnixNano()
		if _, err := bus.PublishEvent(ctx, d.b, rec.topic(), out, nil); err != nil {
			d.retry(del, "publish the delegate's outcome", err)
			return
		}
		d.log.Info("agent: delegate answered", "run_id", rec.Run, "request_event_id", rec.RequestID,
			"delegate_class", dc, "delegate_run_id", t.Run, "event", event.Name(out))
	}
	if err := d.store.Delete(ctx, runs, key); err != nil {
		d.retry(del, "close the delegation", err)
		return
	}
	d.ack(del)
}

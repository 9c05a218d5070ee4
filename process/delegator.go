package process

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/saap-go/agent/internal/runloop"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// The agent delegator: agent work requests become agent runs, and the runs'
// stop events come back as work, through durable consumers on both legs.
// It keeps one record per open agent run in the store; no goroutine or timer
// exists per run (one ticker serves the timeouts of the class).

const agentRunsScope = "_agent_runs"

// DelegatorName is the durable consumer of a process class's agent
// delegators.
func DelegatorName(class string) string { return "agent_delegator_" + class }

// AnswerConsumerName is the durable consumer that reads the stop events of
// agentClass's runs for process class class.
func AnswerConsumerName(class, agentClass string) string {
	return "process_" + class + "_" + agentClass
}

func (c *compiled) agentRoutes() bool {
	for _, r := range c.routes {
		if r.Kind == AgentWork {
			return true
		}
	}
	return false
}

// agentRun is what the delegator records for one agent run it started.
type agentRun struct {
	ProcessID  string `json:"process_id"`
	Walk       string `json:"walkthrough_id"`
	RequestID  string `json:"request_event_id"`
	Answer     string `json:"answer"`
	AgentClass string `json:"agent_class"`
	AgentID    string `json:"agent_id"`
	Thread     string `json:"thread_id"`
	Display    string `json:"display_id"`
	Run        string `json:"run_id"`
	Deadline   int64  `json:"deadline,omitempty"` // unix ns; 0: none
	Timeout    string `json:"timeout,omitempty"`
}

type delegator struct {
	c   *compiled
	o   options
	ctx context.Context
}

func (d *delegator) scope() store.Scope {
	return store.ThreadContext("process."+d.c.class, agentRunsScope)
}

// start starts the answer consumers of every routed agent class, then the
// request consumer.
func (d *delegator) start(ctx context.Context) ([]bus.Consumer, error) {
	var cs []bus.Consumer
	var classes []string
	for _, r := range d.c.routes {
		if r.Kind == AgentWork && !slices.Contains(classes, r.AgentClass) {
			classes = append(classes, r.AgentClass)
		}
	}
	slices.Sort(classes)
	for _, ac := range classes {
		if err := d.o.bus.EnsureStream(ctx, bus.AgentStream(ac)); err != nil {
			return cs, fmt.Errorf("process: stream of agent class %s: %w", ac, err)
		}
		filter, err := topic.ClassControl(ac)
		if err != nil {
			return cs, fmt.Errorf("process: agent class %s: %w", ac, err)
		}
		cfg := bus.ConsumerConfig{Stream: topic.StreamName(ac), Durable: AnswerConsumerName(d.c.class, ac),
			FilterSubject: filter, MaxDeliver: -1}
		if err := runloop.DeliverNew(ctx, d.o.bus, cfg); err != nil {
			return cs, fmt.Errorf("process: %w", err)
		}
		c, err := d.o.bus.Consume(ctx, cfg, func(del bus.Delivery) { d.handleAnswer(del) })
		if err != nil {
			return cs, fmt.Errorf("process: consumer %s: %w", cfg.Durable, err)
		}
		cs = append(cs, c)
	}
	filter, err := topic.ProcessClassWorkRequests(d.c.class)
	if err != nil {
		return cs, fmt.Errorf("process: %w", err)
	}
	cfg := bus.ConsumerConfig{Stream: topic.ProcessStreamName(d.c.class), Durable: DelegatorName(d.c.class),
		FilterSubject: filter, MaxDeliver: -1}
	if err := runloop.DeliverNew(ctx, d.o.bus, cfg); err != nil {
		return cs, fmt.Errorf("process: %w", err)
	}
	c, err := d.o.bus.Consume(ctx, cfg, d.handleRequest)
	if err != nil {
		return cs, fmt.Errorf("process: consumer %s: %w", cfg.Durable, err)
	}
	return append(cs, c), nil
}

func (d *delegator) retry(del bus.Delivery, what string, err error) {
	runloop.Retry(d.o.log, "process: agent delegation", del, what, err)
}

func (d *delegator) reject(del bus.Delivery, reason string) {
	runloop.Reject(d.ctx, d.o.log, "process: agent delegation", del, reason)
}

func (d *delegator) ack(del bus.Delivery) {
	runloop.Ack(d.ctx, d.o.log, "process: agent delegation", del)
}

// handleRequest starts the agent run of one agent work request.
func (d *delegator) handleRequest(del bus.Delivery) {
	m := del.Msg()
	t, err := topic.ParseProcess(m.Subject)
	if err != nil {
		d.reject(del, fmt.Sprintf("subject: %v", err))
		return
	}
	if typ, ok := event.Lookup(t.Name); ok && !slices.Contains(typ.Parents, "AgentWorkRequestEvent") {
		d.ack(del) // a human's or a program's request: not the agents' work
		return
	}
	ev, err := event.Unmarshal(m.Data)
	if err != nil {
		d.reject(del, fmt.Sprintf("work request does not decode: %v", err))
		return
	}
	req := embedded[event.AgentWorkRequestEvent](ev)
	if req == nil {
		d.ack(del)
		return
	}
	reqID := ev.EventBase().EventID
	if reqID == "" {
		reqID = t.EventID
	}
	route := d.c.routes[event.Name(ev)]
	val := func(p *string, def string) string {
		if p != nil && *p != "" {
			return *p
		}
		return def
	}
	rec := agentRun{ProcessID: t.ID, Walk: t.Walkthrough, RequestID: reqID, Answer: route.Answer,
		AgentClass: val(req.AgentClass, route.AgentClass), AgentID: val(req.AgentID, route.AgentID),
		Thread: derivedID("thread", d.c.class, reqID), Display: reqID, Run: derivedID("run", d.c.class, reqID)}
	if rec.Answer == "" {
		rec.Answer = "AgentWorkEvent"
	}
	if route.Timeout > 0 {
		rec.Deadline = time.Now().Add(route.Timeout).UnixNano()
		if ca := ev.EventBase().CreatedAt; ca > 0 {
			rec.Deadline = ca + int64(route.Timeout)
		}
		rec.Timeout = route.Timeout.String()
	}
	if req.StartEvent == nil || req.StartEvent.EventBase() == nil || !event.IsStart(req.StartEvent) {
		d.failWalk(del, rec, fmt.Sprintf("work request %s carries no start event", reqID))
		return
	}
	if rec.AgentClass != route.AgentClass && route.AgentClass != "" {
		d.failWalk(del, rec, fmt.Sprintf("work request %s names agent class %s, but its route and the delegator's consumers serve %s", reqID, rec.AgentClass, route.AgentClass))
		return
	}
	start := event.Clone(req.StartEvent)
	if start.EventBase().EventID == "" {
		start.EventBase().EventID = derivedID("start", d.c.class, reqID)
	}
	if start.EventBase().CreatedAt == 0 {
		start.EventBase().CreatedAt = time.Now().UnixNano()
	}
	at := topic.Agent{Class: rec.AgentClass, ID: rec.AgentID, Thread: rec.Thread, Display: rec.Display, Run: rec.Run,
		Type: topic.Control, Name: event.Name(start), EventID: start.EventBase().EventID}
	subj, err := at.Subject()
	if err != nil {
		d.failWalk(del, rec, fmt.Sprintf("agent subject: %v", err))
		return
	}
	data, err := event.Marshal(start)
	if err != nil {
		d.failWalk(del, rec, fmt.Sprintf("start event does not encode: %v", err))
		return
	}
	raw, _ := json.Marshal(rec)
	ctx := bus.ExtractTrace(d.ctx, m.Header)
	if err := d.o.store.Set(ctx, d.scope(), rec.AgentClass+"."+rec.Run, raw); err != nil {
		d.retry(del, "record the agent run", err)
		return
	}
	if _, err := d.o.bus.PublishStream(ctx, &bus.Msg{Subject: subj, Data: data, Header: bus.InjectTrace(ctx, nil)}, at.EventID); err != nil {
		d.retry(del, "publish the agent's start event", err)
		return
	}
	d.o.log.Info("process: agent work started", "walkthrough_id", rec.Walk, "request_event_id", reqID,
		"agent_class", rec.AgentClass, "agent_id", rec.AgentID, "run_id", rec.Run)
	d.ack(del)
}

// failWalk ends the walkthrough of a request that cannot be delegated.
func (d *delegator) failWalk(del bus.Delivery, rec agentRun, reason string) {
	if err := d.outcome(d.ctx, rec, "failed", &event.ProcessExceptionEvent{Message: reason, HTTPStatusCode: 500}); err != nil {
		d.retry(del, "publish the failed delegation", err)
		return
	}
	d.ack(del)
}

// outcome publishes the one outcome of an agent run into its walkthrough:
// of an answer and a timeout the first to set the gate wins; the loser
// publishes nothing. The outcome's id is derived from the request, so a
// redelivery publishes the same event.
func (d *delegator) outcome(ctx context.Context, rec agentRun, kind string, out event.Event) error {
	cur, _, err := d.o.store.SetMarker(ctx, runKey(d.c.class, rec.Walk), "agent_work."+rec.RequestID, kind)
	if err != nil {
		return err
	}
	if cur != kind {
		d.o.log.Info("process: agent work already had its outcome; dropped", "walkthrough_id", rec.Walk,
			"request_event_id", rec.RequestID, "outcome", cur, "late", kind)
		return nil
	}
	b := out.EventBase()
	b.EventID = derivedID("outcome", d.c.class, rec.RequestID)
	if b.CreatedAt == 0 {
		b.CreatedAt = time.Now().UnixNano()
	}
	if w := embedded[event.WorkEvent](out); w != nil && w.InResponseTo == nil {
		w.InResponseTo = event.Str(rec.RequestID)
	}
	subj, err := topic.Process{Class: d.c.class, ID: rec.ProcessID, Walkthrough: rec.Walk, Type: topic.Work,
		Name: event.Name(out), EventID: b.EventID}.Subject()
	if err != nil {
		return err
	}
	data, err := event.Marshal(out)
	if err != nil {
		return err
	}
	_, err = d.o.bus.PublishStream(ctx, &bus.Msg{Subject: subj, Data: data, Header: bus.InjectTrace(ctx, nil)}, b.EventID)
	return err
}

// handleAnswer turns the first stop or exception of an agent run the
// delegator started into the walkthrough's work.
func (d *delegator) handleAnswer(del bus.Delivery) {
	m := del.Msg()
	t, err := topic.ParseAgent(m.Subject)
	if err != nil {
		d.ack(del)
		return
	}
	if typ, ok := event.Lookup(t.Name); ok && !slices.Contains(typ.Parents, "StopEvent") && !slices.Contains(typ.Parents, "ExceptionEvent") {
		d.ack(del) // ends no run: not worth decoding
		return
	}
	ev, err := event.Unmarshal(m.Data)
	if err != nil || (!event.IsStop(ev) && !event.IsException(ev)) {
		d.ack(del)
		return
	}
	ctx := bus.ExtractTrace(d.ctx, m.Header)
	key := t.Class + "." + t.Run
	raw, ok, err := d.o.store.Get(ctx, d.scope(), key)
	if err != nil {
		d.retry(del, "read the agent run", err)
		return
	}
	if !ok {
		d.ack(del) // not a run of this process class, or answered already
		return
	}
	var rec agentRun
	if err := json.Unmarshal(raw, &rec); err != nil {
		d.o.log.Error("process: agent run record does not decode; dropped", "key", key, "error", err)
		_ = d.o.store.Delete(ctx, d.scope(), key)
		d.ack(del)
		return
	}
	var out event.Event
	if event.IsStop(ev) {
		out, err = answerEvent(rec, t, ev)
		if err != nil {
			out = &event.ProcessExceptionEvent{Message: err.Error(), HTTPStatusCode: 500}
		}
	} else {
		msg := "agent " + rec.AgentClass + " failed"
		if x, ok := ev.(*event.ExceptionEvent); ok && x.Message != "" {
			msg += ": " + x.Message
		}
		out = &event.ProcessExceptionEvent{Message: msg, HTTPStatusCode: 500}
	}
	kind := "answered"
	if err := d.outcome(ctx, rec, kind, out); err != nil {
		d.retry(del, "publish the agent's work", err)
		return
	}
	if err := d.o.store.Delete(ctx, d.scope(), key); err != nil {
		d.retry(del, "close the agent run", err)
		return
	}
	d.o.log.Info("process: agent work done", "walkthrough_id", rec.Walk, "request_event_id", rec.RequestID,
		"agent_class", rec.AgentClass, "event", event.Name(out))
	d.ack(del)
}

// answerEvent wraps the agent's stop event in the route's AgentWorkEvent
// type.
func answerEvent(rec agentRun, t topic.Agent, stop event.Event) (event.Event, error) {
	typ, ok := event.Lookup(rec.Answer)
	if !ok || typ.Go == nil {
		return nil, fmt.Errorf("answer type %s is not registered", rec.Answer)
	}
	out, ok := reflect.New(typ.Go).Interface().(event.Event)
	if !ok {
		return nil, fmt.Errorf("answer type %s is not an event", rec.Answer)
	}
	aw := embedded[event.AgentWorkEvent](out)
	if aw == nil {
		return nil, fmt.Errorf("answer type %s embeds no AgentWorkEvent", rec.Answer)
	}
	ct := string(topic.Control)
	aw.SubmittedBy = &event.Topic{AgentClass: event.Str(t.Class), AgentID: event.Str(t.ID), RunID: event.Str(t.Run),
		ThreadID: event.Str(t.Thread), DisplayID: event.Str(t.Display), EventType: &ct,
		EventName: event.Str(t.Name), EventID: event.Str(t.EventID)}
	aw.AgentStopEvent = stop
	return out, nil
}

// timeouts ends the walkthroughs whose agent work is past its route's
// timeout, until ctx is done.
func (d *delegator) timeouts(ctx context.Context) {
	tick := time.NewTicker(d.o.tick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		keys, err := d.o.store.Keys(ctx, d.scope())
		if err != nil {
			d.o.log.Warn("process: listing agent work for timeouts", "error", err)
			continue
		}
		now := time.Now().UnixNano()
		for _, k := range keys {
			raw, ok, err := d.o.store.Get(ctx, d.scope(), k)
			if err != nil || !ok {
				continue
			}
			var rec agentRun
			if json.Unmarshal(raw, &rec) != nil || rec.Deadline == 0 || now < rec.Deadline {
				continue
			}
			exc := &event.ProcessExceptionEvent{HTTPStatusCode: 504,
				Message: fmt.Sprintf("agent %s did not finish its work within %s", rec.AgentClass, rec.Timeout)}
			if err := d.outcome(ctx, rec, "timed_out", exc); err != nil {
				d.o.log.Warn("process: publishing a timeout", "error", err)
				continue
			}
			_ = d.o.store.Delete(ctx, d.scope(), k)
			d.o.log.Info("process: agent work timed out", "walkthrough_id", rec.Walk, "request_event_id", rec.RequestID)
		}
	}
}

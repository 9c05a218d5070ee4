package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/store"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// walk is the handling of one trigger in one walkthrough.
type walk struct {
	r       *Runner
	t       topic.Process
	run     store.RunKey
	trigger event.Event
	hist    []event.Event // stream order, trigger last
	d       bus.Delivery
	log     *slog.Logger
}

// bind binds the parameters from the history: a single input takes the
// trigger if it fits, else the latest; lists take every fitting event in
// stream order; a fixed-size list takes the first Size. It reports false
// when a required input is missing.
func (w *walk) bind(ps []step.Param) ([][]event.Event, bool) {
	args := make([][]event.Event, len(ps))
	tname := event.Name(w.trigger)
	for i, p := range ps {
		var all []event.Event
		for _, e := range w.hist {
			if p.Accepts(event.Name(e)) {
				all = append(all, e)
			}
		}
		switch p.Kind {
		case step.Single, step.Optional:
			switch {
			case p.Accepts(tname):
				args[i] = []event.Event{w.trigger}
			case len(all) > 0:
				args[i] = all[len(all)-1:]
			case p.Kind == step.Single:
				return nil, false
			}
		case step.List, step.OptionalList:
			if len(all) == 0 && p.Kind == step.List {
				return nil, false
			}
			args[i] = all
		case step.Fixed:
			if len(all) < p.Size {
				return nil, false
			}
			args[i] = all[:p.Size]
		}
	}
	return args, true
}

// runStep runs step s on the trigger if it is ready, under a claim derived
// from the ids it binds, and publishes its outputs. An error means the
// store or the bus failed: the trigger comes back and the step with it.
func (w *walk) runStep(ctx context.Context, s *step.Step) error {
	args, ok := w.bind(s.Params())
	if !ok {
		return nil
	}
	var ids []string
	for _, a := range args {
		for _, e := range a {
			ids = append(ids, e.EventBase().EventID)
		}
	}
	if !slices.Contains(ids, w.trigger.EventBase().EventID) {
		return nil // the trigger binds nowhere (a fixed list filled before it)
	}
	slices.Sort(ids)
	key := derivedID(append([]string{"binding", w.r.c.class, w.t.Walkthrough, s.Name()}, ids...)...)
	sctx := w.stepContext(ctx, s, key)
	if s.HasPrecondition() {
		pargs, ok := w.bind(s.PreconditionParams())
		if !ok {
			return nil
		}
		pass, err := s.Check(sctx, pargs)
		if err != nil {
			return w.fail(ctx, s, key, fmt.Errorf("precondition: %w", err), true)
		}
		if !pass {
			return nil
		}
	}
	st := w.r.o.store
	res, err := st.Claim(ctx, w.run, store.ClaimRequest{Step: s.Name(), Key: key, Max: int64(s.MaxExecutions())})
	if err != nil {
		return err
	}
	switch res.Status {
	case store.Limited:
		return nil
	case store.Done:
		if len(res.Outcome.Outputs) == 0 {
			return nil
		}
		return w.publish(ctx, s, key, res.Outcome, true)
	}
	stop := w.heartbeat()
	outs, err := s.Call(sctx, args)
	stop()
	if err == nil {
		err = checkOutputs(s, outs)
	}
	if err != nil {
		return w.fail(ctx, s, key, err, false)
	}
	o := store.Outcome{}
	for i, e := range outs {
		if err := w.prepare(e, s, key, i); err != nil {
			return w.fail(ctx, s, key, err, false)
		}
		data, err := event.Marshal(e)
		if err != nil {
			return w.fail(ctx, s, key, fmt.Errorf("output %d (%s) does not encode: %w", i+1, event.Name(e), err), false)
		}
		o.Outputs = append(o.Outputs, data)
	}
	if err := st.Complete(ctx, w.run, s.Name(), key, o); err != nil {
		return err
	}
	return w.publish(ctx, s, key, o, false)
}

// checkOutputs accepts the outputs only if every one is declared: a
// mismatch publishes none of them.
func checkOutputs(s *step.Step, outs []event.Event) error {
	var bad []string
	for _, e := range outs {
		if n := event.Name(e); !s.Declares(n) {
			bad = append(bad, n)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("step %s returned %s, which it does not declare (declared: %s); nothing was published",
			s.Name(), strings.Join(bad, ", "), strings.Join(s.Outputs(), ", "))
	}
	return nil
}

// fail ends the walkthrough with a ProcessExceptionEvent (or records the
// failure for a step that continues on error).
func (w *walk) fail(ctx context.Context, s *step.Step, key string, cause error, precondition bool) error {
	st := w.r.o.store
	msg, ok := step.UserMessage(cause)
	if !ok {
		msg = cause.Error()
	}
	w.log.Error("process: step failed", "step", s.Name(), "error", cause)
	if precondition {
		// A precondition runs before the claim; claim now so the failure
		// is recorded once.
		if _, err := st.Claim(ctx, w.run, store.ClaimRequest{Step: s.Name(), Key: key}); err != nil {
			return err
		}
	}
	if !s.StopOnError() {
		return st.Complete(ctx, w.run, s.Name(), key, store.Outcome{Failed: true, Message: msg})
	}
	status := 500
	if c, ok := step.HTTPStatus(cause); ok {
		status = c
	}
	exc := &event.ProcessExceptionEvent{Message: msg, HTTPStatusCode: status}
	if err := w.prepare(exc, s, key, 0); err != nil {
		return err
	}
	data, err := event.Marshal(exc)
	if err != nil {
		return err
	}
	o := store.Outcome{Failed: true, Message: msg, Outputs: []json.RawMessage{data}}
	if err := st.Complete(ctx, w.run, s.Name(), key, o); err != nil {
		return err
	}
	return w.publish(ctx, s, key, o, false)
}

// prepare gives output i of an execution its deterministic id, its time,
// and its routing data.
func (w *walk) prepare(e event.Event, s *step.Step, key string, i int) error {
	b := e.EventBase()
	b.EventID = derivedID("output", w.r.c.class, w.t.Walkthrough, s.Name(), key, fmt.Sprint(i))
	if b.CreatedAt == 0 {
		b.CreatedAt = time.Now().UnixNano()
	}
	switch {
	case event.IsProcessStop(e):
		stop := embedded[event.ProcessStopEvent](e)
		if stop != nil {
			if stop.ProcessClass == nil {
				stop.ProcessClass = event.Str(w.r.c.class)
			}
			if stop.ProcessWalkthroughID == nil {
				stop.ProcessWalkthroughID = event.Str(w.t.Walkthrough)
			}
		}
	case event.IsWorkRequest(e):
		route, ok := w.r.c.routes[event.Name(e)]
		if !ok {
			return fmt.Errorf("no route for %s", event.Name(e))
		}
		return fillRoute(e, route, w.t)
	}
	return nil
}

// fillRoute fills the routing data of route into the work request e of
// walkthrough t, keeping what the step set.
func fillRoute(e event.Event, route Route, t topic.Process) error {
	wr := embedded[event.WorkRequestEvent](e)
	if wr == nil {
		return fmt.Errorf("%s embeds no WorkRequestEvent", event.Name(e))
	}
	if wr.ProcessID == nil {
		wr.ProcessID = event.Str(t.ID)
	}
	// Where the answer is posted: the Submitter's route of the walkthrough.
	endpoint := "/processes/" + t.Class + "/" + t.ID + "/walkthroughs/" + t.Walkthrough + "/work"
	switch route.Kind {
	case AgentWork:
		a := embedded[event.AgentWorkRequestEvent](e)
		if a == nil {
			return fmt.Errorf("%s embeds no AgentWorkRequestEvent", event.Name(e))
		}
		if a.AgentClass == nil {
			a.AgentClass = event.Str(route.AgentClass)
		}
		if a.AgentID == nil {
			a.AgentID = event.Str(route.AgentID)
		}
		if a.StartEvent == nil || !event.IsStart(a.StartEvent) {
			return fmt.Errorf("%s carries no start event for agent %s", event.Name(e), route.AgentClass)
		}
	case ProgramWork:
		p := embedded[event.ProgramWorkRequestEvent](e)
		if p == nil {
			return fmt.Errorf("%s embeds no ProgramWorkRequestEvent", event.Name(e))
		}
		if p.Endpoint == nil {
			p.Endpoint, p.Method = event.Str(endpoint), event.Str(http.MethodPost)
		}
		// Who may answer travels with the request, as on a human request,
		// so a gateway that knows no process code can check it.
		for i, key := range []string{"user_ids", "user_emails", "user_roles"} {
			v := [][]string{route.Who.IDs, route.Who.Emails, route.Who.Roles}[i]
			if v == nil {
				v = []string{}
			}
			raw, err := json.Marshal(v)
			if err != nil {
				return err
			}
			if _, set := event.Extra(e, key); !set {
				if err := event.SetExtra(e, key, raw); err != nil {
					return err
				}
			}
		}
	case HumanWork:
		h := embedded[event.HumanWorkRequestEvent](e)
		if h == nil {
			return fmt.Errorf("%s embeds no HumanWorkRequestEvent", event.Name(e))
		}
		if len(h.UserIDs)+len(h.UserEmails)+len(h.UserRoles) == 0 {
			h.UserIDs, h.UserEmails, h.UserRoles = route.Who.IDs, route.Who.Emails, route.Who.Roles
		}
		if h.UserIDs == nil {
			h.UserIDs = []string{}
		}
		if h.UserEmails == nil {
			h.UserEmails = []string{}
		}
		if h.UserRoles == nil {
			h.UserRoles = []string{}
		}
		h.Notify = !route.Quiet
		if h.Endpoint == nil {
			h.Endpoint, h.Method = event.Str(endpoint), event.Str(http.MethodPost)
		}
		if h.Forms == nil {
			h.Forms = []event.Event{}
		}
		// The reference carries forms in form mode: FormKit elements in
		// the form's own members, the Go values as their defaults.
		for _, f := range h.Forms {
			if f == nil {
				continue
			}
			elems, err := discovery.FormElements(f)
			if err != nil {
				return fmt.Errorf("%s: %w", event.Name(e), err)
			}
			for name, raw := range elems {
				if err := event.SetRaw(f, name, raw); err != nil {
					return fmt.Errorf("%s: %w", event.Name(e), err)
				}
			}
		}
	}
	return nil
}

// embedded returns the *T that e is or embeds, or nil.
func embedded[T any](e event.Event) *T {
	if t, ok := any(e).(*T); ok {
		return t
	}
	v := reflect.ValueOf(e)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil
	}
	v = v.Elem()
	var zero T
	name := reflect.TypeOf(zero).Name()
	for v.Kind() == reflect.Struct {
		f := v.FieldByName(name)
		if !f.IsValid() {
			return nil
		}
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				return nil
			}
			f = f.Elem()
		}
		if p, ok := f.Addr().Interface().(*T); ok {
			return p
		}
		v = f
	}
	return nil
}

// publish publishes an execution's kept outputs in order, then drops them
// from the claim. again is true on a redelivery: outputs the stream holds
// already are skipped.
func (w *walk) publish(ctx context.Context, s *step.Step, key string, o store.Outcome, again bool) error {
	b := w.r.o.bus
	stream := topic.ProcessStreamName(w.r.c.class)
	for _, raw := range o.Outputs {
		e, err := event.Unmarshal(raw)
		if err != nil {
			return engine.Permanent(fmt.Errorf("kept output of %s does not decode: %w", s.Name(), err))
		}
		typ := topic.WorkRequest
		if event.IsWork(e) {
			typ = topic.Work
		}
		subj, err := topic.Process{Class: w.r.c.class, ID: w.t.ID, Walkthrough: w.t.Walkthrough, Type: typ,
			Name: event.Name(e), EventID: e.EventBase().EventID}.Subject()
		if err != nil {
			return engine.Permanent(err)
		}
		has := false
		if again {
			if has, err = b.HasSubject(ctx, stream, subj); err != nil {
				return err
			}
		}
		if !has {
			h := bus.InjectTrace(ctx, nil)
			if _, err := b.PublishStream(ctx, &bus.Msg{Subject: subj, Data: raw, Header: h}, e.EventBase().EventID); err != nil {
				return err
			}
			w.log.Info("process: published", "step", s.Name(), "event", event.Name(e), "subject", subj)
		}
		// Marked once it is out: a crash before that publishes it again
		// on the redelivery, which a marker set first would prevent.
		if event.IsProcessStop(e) || event.IsProcessException(e) {
			if _, _, err := w.r.o.store.SetMarker(ctx, w.run, store.MarkerTerminal, "published"); err != nil {
				return err
			}
		}
	}
	o.Outputs = nil
	return w.r.o.store.Complete(ctx, w.run, s.Name(), key, o)
}

// heartbeat keeps the trigger from being redelivered while a step runs.
func (w *walk) heartbeat() func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(w.r.o.heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = w.d.InProgress()
			}
		}
	}()
	return func() { close(done) }
}

// stepContext is the step.Context of a process step: the walkthrough is the
// run (process class, process id as agent id, walkthrough id as run id).
func (w *walk) stepContext(ctx context.Context, s *step.Step, key string) *stepCtx {
	var cfg json.RawMessage
	if raw, ok, err := w.r.o.store.Get(ctx, w.run.RunContext(), keyConfig); err == nil && ok {
		cfg = raw
	}
	return &stepCtx{
		Context: ctx,
		run: step.Run{Class: w.r.c.class, AgentID: w.t.ID, RunID: w.t.Walkthrough, ThreadID: w.t.Walkthrough,
			DisplayID: w.t.Walkthrough, Trigger: w.trigger},
		runState:    engine.StateOf(w.r.o.store, w.run.RunContext()),
		threadState: engine.StateOf(w.r.o.store, store.ThreadContext(w.run.Class, w.t.ID)),
		key:         key,
		log:         w.log.With("step", s.Name()),
		cfg:         cfg,
	}
}

type stepCtx struct {
	context.Context
	run                   step.Run
	runState, threadState step.State
	key                   string
	log                   *slog.Logger
	cfg                   json.RawMessage
}

func (c *stepCtx) Run() step.Run            { return c.run }
func (c *stepCtx) RunState() step.State     { return c.runState }
func (c *stepCtx) ThreadState() step.State  { return c.threadState }
func (c *stepCtx) IdempotencyKey() string   { return c.key }
func (c *stepCtx) Logger() *slog.Logger     { return c.log }
func (c *stepCtx) Tracer() trace.Tracer     { return noop.NewTracerProvider().Tracer("process") }
func (c *stepCtx) Config() any              { return c.cfg }
func (c *stepCtx) Emit(e event.Event) error { return errNoEmit }

// Locale is the platform's default: a walkthrough carries no user locale.
func (c *stepCtx) Locale() string { return step.DefaultLocale }

// Translate returns key: process steps have no translator.
func (c *stepCtx) Translate(key string) string { return key }

var errNoEmit = errors.New("process: process steps emit no display events; return work requests or a ProcessStopEvent")

// Config decodes the walkthrough's process configuration (from the
// configuration RPC, else the start event's process_config) into a T.
func Config[T any](ctx step.Context) (T, error) {
	var v T
	raw, ok := ctx.Config().(json.RawMessage)
	if !ok || len(raw) == 0 {
		return v, errors.New("process: the walkthrough has no configuration")
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("process: configuration: %w", err)
	}
	return v, nil
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/saap-go/agent/store"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// ErrControlEmit is returned by step.Context.Emit for a control event:
// control events are a step's results, not something it streams.
var ErrControlEmit = errors.New("dispatch: Emit takes display events only; return control events as results")

// ErrUnregistered is returned (wrapped, with the Go type and how to
// register it) by step.Context.Emit for an event whose Go type is not
// registered: without a wire name it cannot be published.
var ErrUnregistered = errors.New("dispatch: event type not registered")

// ErrRunEnded is returned by step.Context.Emit once the run has published
// its terminal event.
var ErrRunEnded = step.ErrRunEnded

// state is the step.State view of one store.Store scope.
type state struct {
	s     store.Store
	scope store.Scope
	// seeded, if set, is the run whose start write a step must see land
	// before it reads or writes the run's context.
	seeded *runEntry
}

// StateOf returns the step.State view of scope in s: values are JSON, as in
// the reference's contexts.
func StateOf(s store.Store, scope store.Scope) step.State { return state{s: s, scope: scope} }

func (st state) wait(ctx context.Context) error {
	if st.seeded == nil {
		return nil
	}
	return st.seeded.waitSeed(ctx)
}

func (st state) Get(ctx context.Context, key string, v any) (bool, error) {
	if err := st.wait(ctx); err != nil {
		return false, err
	}
	raw, ok, err := st.s.Get(ctx, st.scope, key)
	if err != nil || !ok {
		return false, err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("dispatch: %s context key %q: %w", st.scope.Kind, key, err)
	}
	return true, nil
}

func (st state) Set(ctx context.Context, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("dispatch: %s context key %q: %w", st.scope.Kind, key, err)
	}
	if err := st.wait(ctx); err != nil {
		return err
	}
	return st.s.Set(ctx, st.scope, key, raw)
}

func (st state) Delete(ctx context.Context, key string) error {
	if err := st.wait(ctx); err != nil {
		return err
	}
	return st.s.Delete(ctx, st.scope, key)
}

func (st state) Keys(ctx context.Context) ([]string, error) {
	if err := st.wait(ctx); err != nil {
		return nil, err
	}
	return st.s.Keys(ctx, st.scope)
}

func (st state) Incr(ctx context.Context, key string, delta int64) (int64, error) {
	if err := st.wait(ctx); err != nil {
		return 0, err
	}
	return st.s.Incr(ctx, st.scope, key, delta)
}

// runState is the run context as a step sees it: what the run wrote to the
// store, over what the stream holds, the configuration and the public
// fields of the run's latest StartEvent (the reference's to_context_dict),
// which the engine never copies into the store. Deleting such a value
// stores a tombstone, so that it stays deleted on every replica.
type runState struct {
	state
	c *stepContext
}

// tombstone is the stored value of a deleted value the stream still holds;
// no JSON value starts with it.
var tombstone = []byte{0}

func isTombstone(raw []byte) bool { return len(raw) == 1 && raw[0] == 0 }

// virtual returns the value the stream gives key, if any.
func (st *runState) virtual(ctx context.Context, key string) ([]byte, bool, error) {
	fields, err := st.c.e.startFields(ctx, st.c)
	if err != nil {
		return nil, false, err
	}
	v, ok := fields[key]
	return v, ok, nil
}

func (st *runState) Get(ctx context.Context, key string, v any) (bool, error) {
	if err := st.wait(ctx); err != nil {
		return false, err
	}
	raw, ok, err := st.s.Get(ctx, st.scope, key)
	if err != nil {
		return false, err
	}
	if !ok {
		if raw, ok, err = st.virtual(ctx, key); err != nil || !ok {
			return false, err
		}
	}
	if isTombstone(raw) {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("dispatch: run context key %q: %w", key, err)
	}
	return true, nil
}

func (st *runState) Delete(ctx context.Context, key string) error {
	if err := st.wait(ctx); err != nil {
		return err
	}
	if _, ok, err := st.virtual(ctx, key); err != nil {
		return err
	} else if ok {
		return st.s.Set(ctx, st.scope, key, tombstone)
	}
	return st.s.Delete(ctx, st.scope, key)
}

func (st *runState) Keys(ctx context.Context) ([]string, error) {
	if err := st.wait(ctx); err != nil {
		return nil, err
	}
	keys, err := st.s.Keys(ctx, st.scope)
	if err != nil {
		return nil, err
	}
	fields, err := st.c.e.startFields(ctx, st.c)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(keys)+len(fields))
	for k := range fields {
		out = append(out, k)
	}
	for _, k := range keys {
		if _, dup := fields[k]; !dup {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	// Drop the deleted: a stored tombstone hides the key.
	kept := out[:0]
	for _, k := range out {
		if _, isStored := slices.BinarySearch(keys, k); isStored {
			raw, ok, err := st.s.Get(ctx, st.scope, k)
			if err != nil {
				return nil, err
			}
			if ok && isTombstone(raw) {
				continue
			}
		}
		kept = append(kept, k)
	}
	return kept, nil
}

func (st *runState) Incr(ctx context.Context, key string, delta int64) (int64, error) {
	if err := st.wait(ctx); err != nil {
		return 0, err
	}
	if _, ok, err := st.s.Get(ctx, st.scope, key); err != nil {
		return 0, err
	} else if !ok {
		// A start field counts from its value: store it first.
		if raw, found, err := st.virtual(ctx, key); err != nil {
			return 0, err
		} else if found {
			if err := st.s.Set(ctx, st.scope, key, raw); err != nil {
				return 0, err
			}
		}
	}
	return st.s.Incr(ctx, st.scope, key, delta)
}

// startFields returns the run context values the stream holds for the run
// of c: _agent_config, and the public fields of its latest StartEvent up to
// c's trigger, read from the history (loaded from the stream if need be).
func (e *Engine) startFields(ctx context.Context, c *stepContext) (map[string]json.RawMessage, error) {
	r := c.r
	r.startMu.Lock()
	ev, fields := r.start, r.startFields
	r.startMu.Unlock()
	if ev == nil {
		// Not handled here: the run's latest start in its history.
		r.mu.Lock()
		err := e.load(ctx, r, c.seq, c.run.Trigger)
		if err == nil {
			for i := len(r.events) - 1; i >= 0; i-- {
				h := r.events[i]
				if h.seq <= c.seq && event.IsStart(h.ev) {
					r.setStart(h.seq, h.ev)
					break
				}
			}
		}
		r.mu.Unlock()
		if err != nil {
			return nil, err
		}
		r.startMu.Lock()
		ev, fields = r.start, r.startFields
		r.startMu.Unlock()
	}
	if fields != nil {
		return fields, nil
	}
	fields = map[string]json.RawMessage{}
	r.cfgMu.Lock()
	if r.cfgRaw != nil {
		fields[KeyAgentConfig] = r.cfgRaw
	}
	r.cfgMu.Unlock()
	if ev != nil {
		data, err := event.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("dispatch: encode start event: %w", err)
		}
		if err := eachMember(data, func(k string, v []byte) error {
			if !strings.HasPrefix(k, "_") && k != "event_id" && k != "created_at" {
				fields[k] = v
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("dispatch: run context of the start event: %w", err)
		}
	}
	r.startMu.Lock()
	if r.start == ev {
		r.startFields = fields
	}
	r.startMu.Unlock()
	return fields, nil
}

// tracerName names the tracer steps get from Context.Tracer.
const tracerName = "github.com/saap-go/agent"

var noopTracer = noop.NewTracerProvider().Tracer(tracerName)

// stepContext is the step.Context of one execution (or precondition call).
type stepContext struct {
	context.Context
	e     *Engine
	r     *runEntry
	t     topic.Agent // the trigger's topic: the run's identity
	seq   uint64      // the trigger's stream sequence
	run   step.Run
	step  string
	b     *binding
	cfg   any
	emits atomic.Int32
	// invalid is the first emitted event that failed checkOutput: the
	// execution ends the run even if the step ignores Emit's error.
	invalid atomic.Pointer[error]
	// locale is the run's locale once a step asked for it.
	locale atomic.Pointer[string]
}

func (c *stepContext) Run() step.Run { return c.run }

func (c *stepContext) RunState() step.State {
	return &runState{state: state{s: c.e.store, scope: c.r.key.RunContext(), seeded: c.r}, c: c}
}

func (c *stepContext) ThreadState() step.State {
	return state{s: c.e.store, scope: store.ThreadContext(c.e.class, c.t.Thread)}
}

func (c *stepContext) IdempotencyKey() string {
	return idempotencyKey(c.e.class, c.t.Run, c.step, c.b.key)
}

func (c *stepContext) Logger() *slog.Logger {
	return c.e.log.With("agent_class", c.e.class, "run_id", c.t.Run, "thread_id", c.t.Thread, "step", c.step)
}

func (c *stepContext) Tracer() trace.Tracer {
	// The tracer of the span an interceptor (tracing) started for the
	// step, if any.
	if sp := trace.SpanFromContext(c.Context); sp.SpanContext().IsValid() {
		return sp.TracerProvider().Tracer(tracerName)
	}
	return noopTracer
}

func (c *stepContext) Config() any { return c.cfg }

// KeyLocale is the run-context key of the run's locale, which the start
// event's locale field seeds (the reference's LocaleHandler reads it there).
const KeyLocale = "locale"

// Locale reads the run's locale from the run context when a step first asks
// (so a run whose steps never ask pays nothing for it), then keeps it for
// the execution.
func (c *stepContext) Locale() string {
	if p := c.locale.Load(); p != nil {
		return *p
	}
	l := step.DefaultLocale
	var s string
	if ok, err := c.RunState().Get(c, KeyLocale, &s); err != nil {
		c.e.log.DebugContext(c, "dispatch: run locale not read; the default is used", "run_id", c.t.Run, "error", err)
	} else if ok {
		l = step.NormalizeLocale(s)
	}
	c.locale.Store(&l)
	return l
}

func (c *stepContext) Translate(key string) string {
	if c.e.translator == nil {
		return key
	}
	return c.e.translator.Translate(c.Locale(), key)
}

// Emit publishes a display event now, on core NATS only. Its id is derived
// from the execution and a per-execution counter, so a re-run re-emits the
// same ids. An event that fails strict validation (event.ValidateFields) is
// not published: Emit returns the error, and the run ends with an
// ExceptionEvent when the step returns.
func (c *stepContext) Emit(ev event.Event) error {
	if ev == nil {
		return errors.New("dispatch: Emit(nil)")
	}
	if event.Name(ev) == "" {
		return unregistered(ev)
	}
	if event.IsControl(ev) {
		return fmt.Errorf("%w (got %s)", ErrControlEmit, event.Name(ev))
	}
	if !event.IsDisplay(ev) {
		return fmt.Errorf("dispatch: Emit: %s is not a display event", event.Name(ev))
	}
	n := int(c.emits.Add(1))
	b := ev.EventBase()
	if b.EventID == "" {
		b.EventID = c.b.id("emit", n)
	}
	if b.CreatedAt == 0 {
		b.CreatedAt = c.e.now().UnixNano()
	}
	if err := checkOutput(c.step, ev); err != nil {
		c.invalid.CompareAndSwap(nil, &err)
		return err
	}
	ok, err := c.e.publish(c, c.r, c.t, ev, origin{step: c.step, trigger: c.run.Trigger.EventBase().EventID})
	if err != nil {
		return err
	}
	if !ok {
		return ErrRunEnded
	}
	return nil
}

// unregistered says which Go type lacks a registration and how to add it.
func unregistered(ev event.Event) error {
	t := reflect.TypeOf(ev)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := t.String() // package-qualified, e.g. "main.Progress"
	return fmt.Errorf("%w: Emit(%T): register the type once, e.g. in an init function: func init() { event.MustRegister[%s]() }",
		ErrUnregistered, ev, name)
}

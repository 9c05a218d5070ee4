package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/interceptor"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

type (
	Booked  struct{ event.ControlEvent }
	Drafted struct{ event.ControlEvent }
)

func init() {
	event.MustRegister[Booked]()
	event.MustRegister[Drafted]()
}

// statusSpy is a memory store that reports every status it records.
type statusSpy struct {
	*memstore.Store
	ch chan status.Record
}

func newStatusSpy() *statusSpy {
	return &statusSpy{Store: memstore.New(), ch: make(chan status.Record, 64)}
}

func (s *statusSpy) PutStatus(ctx context.Context, run store.RunKey, thread string, value []byte) error {
	err := s.Store.PutStatus(ctx, run, thread, value)
	var st status.Record
	if err == nil && json.Unmarshal(value, &st) == nil {
		select {
		case s.ch <- st:
		default:
		}
	}
	return err
}

// await returns the first status of run in state, failing after 10 s.
func (s *statusSpy) await(t *testing.T, run string, state status.State) status.Record {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case st := <-s.ch:
			if st.Run == run && st.State == state {
				return st
			}
		case <-timeout:
			t.Fatalf("run %s: no status %s within 10 s", run, state)
		}
	}
}

// cancelAgent books (a compensable step, when undo is set), then drafts in
// a step that blocks until its context ends; the draft's output would
// start a third step.
type cancelAgent struct {
	started chan struct{} // closed when draft runs
	cause   chan error    // the cause draft's context ended with
	undone  atomic.Int32
	after   atomic.Int32 // runs of the step after draft
	once    sync.Once
}

func (a *cancelAgent) workflow(t *testing.T, class string, undo bool) *step.Workflow {
	a.started, a.cause = make(chan struct{}), make(chan error, 1)
	var opts []step.Option
	if undo {
		opts = append(opts, step.Compensate(func(ctx step.Context, o *Order, b *Booked) error {
			a.undone.Add(1)
			return nil
		}))
	}
	book := step.New(func(ctx step.Context, o *Order) (*Booked, error) { return &Booked{}, nil },
		append(opts, step.Name("book"))...)
	draft := step.New(func(ctx step.Context, b *Booked) (*Drafted, error) {
		a.once.Do(func() { close(a.started) })
		<-ctx.Done()
		a.cause <- context.Cause(ctx)
		// A step that does not stop when told: its output must not
		// start anything.
		return &Drafted{}, nil
	}, step.Name("draft"))
	send := step.New(func(ctx step.Context, d *Drafted) (*event.StopEvent, error) {
		a.after.Add(1)
		return &event.StopEvent{}, nil
	}, step.Name("send"))
	w, err := step.NewWorkflow(class, book, draft, send)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// handledSpy reports the name and id of every event whose handling ended.
type handledSpy struct {
	interceptor.Base
	ch chan string
}

func (h *handledSpy) Deliver(ctx context.Context, d interceptor.Delivery) (context.Context, func(error)) {
	name, id := event.Name(d.Event), d.Event.EventBase().EventID
	return ctx, func(error) { h.ch <- name + " " + id }
}

// await waits for the handlings of the events named by want ("name id",
// or "name" for any id) to end, in any order.
func (h *handledSpy) await(t *testing.T, want ...string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for len(want) > 0 {
		select {
		case got := <-h.ch:
			name, _, _ := strings.Cut(got, " ")
			for i, w := range want {
				if w == got || w == name {
					want = append(want[:i], want[i+1:]...)
					break
				}
			}
		case <-timeout:
			t.Fatalf("the handlings of %v did not end within 10 s", want)
		}
	}
}

func newEngine(t *testing.T, w *step.Workflow, b bus.Bus, s store.Store, consume bool, opts ...engine.Option) *engine.Engine {
	t.Helper()
	ctx := context.Background()
	if err := b.EnsureStream(ctx, bus.AgentStream(w.Class())); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(w, b, s, append([]engine.Option{engine.WithLogger(quiet), engine.WithHeartbeat(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	if consume {
		// Each delivery in a goroutine of its own, as a runner's
		// concurrency allows: a blocked step holds up nothing else.
		var wg sync.WaitGroup
		c, err := b.Consume(ctx, bus.RunnerConsumer(w.Class()), func(d bus.Delivery) { wg.Go(func() { eng.Handle(ctx, d) }) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Stop(); wg.Wait() })
	}
	return eng
}

// controlEvents collects the names of the control events of class on b.
// The returned function waits until the names in want have arrived (each
// as often as listed), then returns all names seen.
func controlEvents(t *testing.T, b bus.Bus, class string) func(want ...string) []string {
	t.Helper()
	var mu sync.Mutex
	var names []string
	arrived := make(chan struct{}, 1)
	sub, err := b.Subscribe(context.Background(), "agent."+class+".*.*.*.*.control_event.*.*", "", func(m *bus.Msg) {
		tp, err := topic.ParseAgent(m.Subject)
		if err == nil {
			mu.Lock()
			names = append(names, tp.Name)
			mu.Unlock()
			select {
			case arrived <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return func(want ...string) []string {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			mu.Lock()
			got := append([]string(nil), names...)
			mu.Unlock()
			missing := false
			for _, w := range want {
				if count(got, w) < count(want, w) {
					missing = true
				}
			}
			if !missing {
				return got
			}
			select {
			case <-arrived:
			case <-timeout:
				t.Fatalf("control events %v: %v did not arrive within 10 s", got, want)
			}
		}
	}
}

func count(names []string, name string) (n int) {
	for _, x := range names {
		if x == name {
			n++
		}
	}
	return n
}

// Cancelling a run in the middle of a step cancels the step's context with
// step.ErrRunEnded, starts nothing after it (the output the step still
// returns is dropped), runs the compensation of the completed step when it
// declares one, ends the run with a RunCancelledEvent and records it as
// cancelled. Cancelling it again, or publishing a second request, changes
// nothing.
func TestCancelMidStep(t *testing.T) {
	for _, undo := range []bool{false, true} {
		name := "plain"
		if undo {
			name = "compensated"
		}
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			a := &cancelAgent{}
			class := "Cancel" + map[bool]string{false: "Plain", true: "Undo"}[undo]
			w := a.workflow(t, class, undo)
			b := memory.New(memory.Options{Logger: quiet})
			defer b.Close()
			spy := newStatusSpy()
			seen := controlEvents(t, b, class)
			handled := &handledSpy{ch: make(chan string, 64)}
			eng := newEngine(t, w, b, spy, true, engine.WithInterceptors(handled))
			run := startRun(t, b, class, &Order{Item: "book"}, nil)
			select {
			case <-a.started:
			case <-time.After(10 * time.Second):
				t.Fatal("the draft step did not start")
			}
			st, err := eng.Cancel(ctx, run, "the user changed their mind", "alice")
			if err != nil {
				t.Fatal(err)
			}
			if st.Display != run {
				t.Errorf("status display %q, want %q", st.Display, run)
			}
			select {
			case cause := <-a.cause:
				if !errors.Is(cause, step.ErrRunEnded) {
					t.Errorf("the step's context ended with %v, want step.ErrRunEnded", cause)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the running step's context was not cancelled")
			}
			final := spy.await(t, run, status.Cancelled)
			if undo {
				if n := a.undone.Load(); n != 1 {
					t.Errorf("compensation ran %d times, want 1", n)
				}
				if len(final.Compensated) != 1 || final.Compensated[0] != "book" {
					t.Errorf("status lists compensated %v, want [book]", final.Compensated)
				}
			} else if n := a.undone.Load(); n != 0 {
				t.Errorf("compensation ran %d times without one declared", n)
			}
			// Once more, through the API and as a raw request: no-ops.
			if _, err := eng.Cancel(ctx, run, "", ""); !errors.Is(err, engine.ErrEnded) {
				t.Errorf("second Cancel: %v, want ErrEnded", err)
			}
			again, err := status.PublishCancel(ctx, b, st, "again", "bob", nil)
			if err != nil {
				t.Fatal(err)
			}
			// Booked is draft's trigger: its handling ends once the
			// output was dropped.
			handled.await(t, "RunCancelRequestedEvent "+again, "Booked")
			if n := a.after.Load(); n != 0 {
				t.Errorf("the step after the cancelled one ran %d times", n)
			}
			want := []string{"RunCancelledEvent"}
			if undo {
				want = append(want, "RunCompensatedEvent")
			}
			names := seen(want...)
			if n := count(names, "RunCancelledEvent"); n != 1 {
				t.Errorf("%d RunCancelledEvents, want 1 (events %v)", n, names)
			}
			if n := count(names, "Drafted"); n != 0 {
				t.Errorf("the cancelled step's output was published (events %v)", names)
			}
			if undo && count(names, "RunCompensatedEvent") != 1 {
				t.Errorf("no RunCompensatedEvent (events %v)", names)
			}
			if got, _ := eng.Status(ctx, run); got.State != status.Cancelled {
				t.Errorf("status after the second request %s, want cancelled", got.State)
			}
		})
	}
}

// A cancel handled by one replica stops the step another replica runs:
// the second engine handles the request (it does not consume), the first
// runs the step and learns of the end through its watch of the terminal
// markers.
func TestCancelAcrossReplicas(t *testing.T) {
	ctx := t.Context()
	a := &cancelAgent{}
	w := a.workflow(t, "CancelReplicas", false)
	b := memory.New(memory.Options{Logger: quiet})
	defer b.Close()
	spy := newStatusSpy()
	newEngine(t, w, b, spy, true)
	other := newEngine(t, w, b, spy, false)
	run := startRun(t, b, "CancelReplicas", &Order{}, nil)
	select {
	case <-a.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the draft step did not start")
	}
	st, err := other.Status(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	req := &event.RunCancelRequestedEvent{Reason: "operator"}
	event.Stamp(req)
	tp := topic.Agent{Class: st.Class, ID: st.AgentID, Thread: st.Thread, Display: st.Display, Run: run,
		Type: topic.Control, Name: event.Name(req), EventID: req.EventID}
	if err := other.Process(ctx, tp, req, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case cause := <-a.cause:
		if !errors.Is(cause, step.ErrRunEnded) {
			t.Errorf("the step's context ended with %v, want step.ErrRunEnded", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the step on the other replica was not cancelled")
	}
	spy.await(t, run, status.Cancelled)
}

// A cancel request is fenced like any event: one naming the run with
// another thread or agent id is refused and the run goes on; a cancel of
// a run that has ended, or was never started, does nothing.
func TestCancelFenced(t *testing.T) {
	ctx := t.Context()
	a := &cancelAgent{}
	w := a.workflow(t, "CancelFence", false)
	b := memory.New(memory.Options{Logger: quiet})
	defer b.Close()
	spy := newStatusSpy()
	eng := newEngine(t, w, b, spy, true)
	// Never started.
	unknown := event.NewID()
	base := topic.Agent{Class: "CancelFence", ID: "a", Thread: unknown, Display: unknown, Run: unknown, Type: topic.Control}
	req := func() (topic.Agent, *event.RunCancelRequestedEvent) {
		r := &event.RunCancelRequestedEvent{}
		event.Stamp(r)
		tp := base
		tp.Name, tp.EventID = event.Name(r), r.EventID
		return tp, r
	}
	tp, r := req()
	if err := eng.Process(ctx, tp, r, 0); !errors.Is(err, engine.ErrRefused) {
		t.Errorf("cancel of an unknown run: %v, want ErrRefused", err)
	}
	run := startRun(t, b, "CancelFence", &Order{}, nil) // agent "a", thread = display = run
	base.Thread, base.Display, base.Run = run, run, run
	select {
	case <-a.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the draft step did not start")
	}
	for _, wrong := range []func(*topic.Agent){
		func(t *topic.Agent) { t.Thread = event.NewID() },
		func(t *topic.Agent) { t.ID = "b" },
	} {
		tp, r := req()
		wrong(&tp)
		if err := eng.Process(ctx, tp, r, 0); !errors.Is(err, engine.ErrRefused) {
			t.Errorf("cancel from another thread or agent: %v, want ErrRefused", err)
		}
	}
	select {
	case <-a.cause:
		t.Fatal("a refused cancel stopped the step")
	default:
	}
	tp, r = req()
	r.Reason = string(make([]byte, event.MaxCancelReason+1))
	if err := eng.Process(ctx, tp, r, 0); !errors.Is(err, engine.ErrRefused) {
		t.Errorf("cancel with an oversize reason: %v, want ErrRefused", err)
	}
	tp, r = req()
	if err := eng.Process(ctx, tp, r, 0); err != nil {
		t.Fatal(err)
	}
	<-a.cause
	tp, r = req()
	if err := eng.Process(ctx, tp, r, 0); err != nil {
		t.Errorf("cancel of an ended run: %v, want nil", err)
	}
}

// A cancel handled before its run's start (beside it, on another replica
// or goroutine) is handed back to be tried again, not refused: the stream
// holds the start.
func TestCancelBeforeStartHandled(t *testing.T) {
	ctx := t.Context()
	a := &cancelAgent{}
	w := a.workflow(t, "CancelEarly", false)
	b := memory.New(memory.Options{Logger: quiet})
	defer b.Close()
	eng := newEngine(t, w, b, newStatusSpy(), false)
	run := startRun(t, b, "CancelEarly", &Order{}, nil) // in the stream, not handled
	req := &event.RunCancelRequestedEvent{}
	event.Stamp(req)
	tp := topic.Agent{Class: "CancelEarly", ID: "a", Thread: run, Display: run, Run: run, Type: topic.Control,
		Name: event.Name(req), EventID: req.EventID}
	err := eng.Process(ctx, tp, req, 0)
	if err == nil || errors.Is(err, engine.ErrRefused) || engine.IsPermanent(err) {
		t.Fatalf("cancel before the start was handled: %v, want a transient error", err)
	}
	other := tp
	other.Thread = event.NewID()
	if err := eng.Process(ctx, other, req, 0); !errors.Is(err, engine.ErrRefused) {
		t.Errorf("cancel naming another thread: %v, want ErrRefused", err)
	}
}

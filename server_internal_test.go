package agent

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/saap-go/agent/bus"
)

type countingEngine struct {
	mu      sync.Mutex
	handled int
	block   chan struct{} // nil: return at once
}

func (e *countingEngine) Handle(ctx context.Context, d bus.Delivery) {
	if e.block != nil {
		<-e.block
	}
	e.mu.Lock()
	e.handled++
	e.mu.Unlock()
	_ = d.Ack(ctx)
}

type stubDelivery struct{ bus.Delivery }

func (stubDelivery) NumDelivered() uint64                     { return 1 }
func (stubDelivery) Ack(context.Context) error                { return nil }
func (stubDelivery) Nak(time.Duration) error                  { return nil }
func (stubDelivery) Seq() uint64                              { return 1 }
func (stubDelivery) Msg() *bus.Msg                            { return &bus.Msg{} }
func (stubDelivery) Term(string) error                        { return nil }
func (stubDelivery) DeadLetter(context.Context, string) error { return nil }

type stoppedConsumer struct{}

func (stoppedConsumer) Stop() error { return nil }

// After a burst wider than maxIdle, the workers beyond it end, the ones
// kept take the next events, and shutdown ends them all.
func TestServerKeepsBoundedWorkers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const burst = 3 * maxIdle
	eng := &countingEngine{block: make(chan struct{})}
	s := newServer(eng, burst, slog.New(slog.DiscardHandler))
	for range burst {
		s.handle(stubDelivery{})
	}
	close(eng.block) // all burst handlings are in flight: let them end
	s.inflight.Wait()
	// A worker counts itself idle before it waits; the ones over the bound
	// return instead.
	deadline := time.Now().Add(10 * time.Second)
	for s.idleN.Load() != maxIdle {
		if time.Now().After(deadline) {
			t.Fatalf("%d idle workers after the burst, want %d", s.idleN.Load(), maxIdle)
		}
		time.Sleep(time.Millisecond)
	}
	eng.block = nil
	for range 10 * maxIdle {
		s.handle(stubDelivery{})
	}
	s.inflight.Wait()
	if n := s.idleN.Load(); n > maxIdle {
		t.Fatalf("%d idle workers, over the bound of %d", n, maxIdle)
	}
	eng.mu.Lock()
	handled := eng.handled
	eng.mu.Unlock()
	if handled != burst+10*maxIdle {
		t.Fatalf("handled %d events, want %d", handled, burst+10*maxIdle)
	}
	s.shutdown(stoppedConsumer{}, time.Second)
}

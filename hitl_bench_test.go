package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/store"

	"github.com/nats-io/nats.go/jetstream"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/store/natskv"
)

// The HITL timeout benchmarks (BENCHMARKS.md, "hitl: paused runs with
// timeouts").
//
//	go test -run '^$' -bench 'HITL' -benchtime 1x .

// BenchmarkHITLPausedTimeouts parks 10,000 runs on a confirmation with a
// timeout each (40 s plus a random part of up to 200 s, so that they fall
// due at about 50 a second once all are parked), reports the heap and
// goroutines they cost the runner's process (the NATS server runs in a child process), then lets every
// timeout fire and reports how late the timeout events arrived: from the
// deadline (the timeout event's created_at) to its arrival at a
// subscriber.
func BenchmarkHITLPausedTimeouts(b *testing.B) { eachCacheSize(b, benchPausedTimeouts) }

func benchPausedTimeouts(b *testing.B, opts []agent.Option) {
	const (
		runs    = 10_000
		timeout = 40 * time.Second  // longer than parking the runs takes
		spread  = 200 * time.Second // deadlines spread over 200 s: about 50 a second
	)
	kvDefault(b)
	for b.Loop() {
		url := serverProcess(b)
		c := client(b, url)
		class := uniqueClass("HITLPaused")
		r := startRunner(b, &hitlAgent{class: class, timeout: timeout, spread: spread}, append(opts, agent.WithNATS(url))...)
		ctx := context.Background()

		late := make([]time.Duration, 0, runs+1)
		var mu sync.Mutex
		all := make(chan struct{})
		sub, err := c.Subscribe(ctx, "agent."+class+".*.*.*.*.control_event.HumanInTheLoopTimeoutEvent.*", "", func(m *bus.Msg) {
			at := time.Now()
			ev, err := event.Unmarshal(m.Data)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			late = append(late, at.Sub(time.Unix(0, ev.EventBase().CreatedAt)))
			if len(late) == runs+1 {
				close(all)
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		// Warm up with one paused run.
		publish(b, c, newRun(class, "p"), userMessage("x"), nil)
		waitAcked(b, c.JetStream(), class)

		before, gBefore := heapNow()
		parkStart := time.Now()
		var failed atomic.Int32
		for range runs {
			if err := publishErr(ctx, c, newRun(class, "p"), userMessage("x"), nil); err != nil {
				failed.Add(1)
			}
		}
		if failed.Load() > 0 {
			b.Fatalf("%d publishes failed", failed.Load())
		}
		waitAcked(b, c.JetStream(), class)
		parked := time.Since(parkStart)
		after, gAfter := heapNow()
		mu.Lock()
		early := len(late)
		mu.Unlock()
		b.ReportMetric(float64(int64(after)-int64(before))/runs, "heap-B/paused-run")
		b.ReportMetric(float64(gAfter-gBefore), "goroutines-added")
		b.ReportMetric(parked.Seconds(), "park-s")
		b.ReportMetric(float64(early), "fired-while-parking")

		select {
		case <-all:
		case <-time.After(timeout + spread + 2*time.Minute):
			mu.Lock()
			b.Fatalf("%d of %d timeouts arrived", len(late), runs+1)
		}
		_ = sub.Unsubscribe()
		slices.Sort(late)
		p := func(q float64) float64 {
			return float64(late[min(len(late)-1, int(q*float64(len(late))))].Microseconds()) / 1000
		}
		b.ReportMetric(p(0.50), "late-p50-ms")
		b.ReportMetric(p(0.99), "late-p99-ms")
		b.ReportMetric(float64(late[len(late)-1].Microseconds())/1000, "late-max-ms")
		if err := r.stop(); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}

// BenchmarkHITLRestartPendingTimeouts measures a restart of a HITL agent
// (New, Run until Ready, one run asked and answered to its StopEvent) with
// 10,000 pending deadlines in the store against none.
func BenchmarkHITLRestartPendingTimeouts(b *testing.B) {
	for _, n := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) {
			s := benchServer(b)
			c := client(b, s.URL())
			class := uniqueClass("HITLRestart")
			ctx := context.Background()
			if err := c.EnsureStream(ctx, bus.AgentStream(class)); err != nil {
				b.Fatal(err)
			}
			if n > 0 {
				fillDeadlines(b, c, class, n)
			}
			ready := time.Duration(0)
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				r, err := agent.New(&hitlAgent{class: class, timeout: time.Hour}, agent.WithNATS(s.URL()), agent.Standalone(), agent.Discoverable(false), silent())
				if err != nil {
					b.Fatal(err)
				}
				rctx, cancel := context.WithCancel(ctx)
				errc := make(chan error, 1)
				go func() { errc <- r.Run(rctx) }()
				<-r.Ready()
				ready += time.Since(t0)
				run := newRun(class, "r")
				asked := make(chan *event.HumanInTheLoopConfirmationRequestEvent, 1)
				sub, err := c.Subscribe(ctx, "agent."+class+".*.*.*."+run.Run+".control_event.HumanInTheLoopConfirmationRequestEvent.*", "", func(m *bus.Msg) {
					if ev, err := event.Unmarshal(m.Data); err == nil {
						asked <- ev.(*event.HumanInTheLoopConfirmationRequestEvent)
					}
				})
				if err != nil {
					b.Fatal(err)
				}
				stopped := make(chan struct{}, 1)
				stopSub, err := c.Subscribe(ctx, "agent."+class+".*.*.*."+run.Run+".control_event.StopEvent.*", "", func(*bus.Msg) { stopped <- struct{}{} })
				if err != nil {
					b.Fatal(err)
				}
				if err := publishErr(ctx, c, run, userMessage("hi"), nil); err != nil {
					b.Fatal(err)
				}
				req := <-asked
				if err := publishErr(ctx, c, run, answer(req, true), nil); err != nil {
					b.Fatal(err)
				}
				<-stopped
				b.StopTimer()
				_ = sub.Unsubscribe()
				_ = stopSub.Unsubscribe()
				cancel()
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(ready.Microseconds())/1000/float64(b.N), "ready-ms")
		})
	}
}

// fillDeadlines stores n pending deadlines of class, due in a day, in the
// store the runner uses by default, as n paused runs would have left them.
func fillDeadlines(b *testing.B, c interface {
	JetStream() jetstream.JetStream
}, class string, n int) {
	b.Helper()
	ctx := context.Background()
	st, err := natskv.New(ctx, c.JetStream(), natskv.Config{})
	if err != nil {
		b.Fatal(err)
	}
	// Spread over the next day, as paused runs with timeouts of up to a
	// day leave them, in the engine's layout (see engine.DeadlineScope).
	now := time.Now().UnixNano()
	span := int64(24 * time.Hour)
	var wg sync.WaitGroup
	var indexed sync.Map
	work := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				run, req := event.NewID(), event.NewID()
				due := now + int64(time.Minute) + span*int64(i)/int64(n)
				bucket := due / int64(engine.DeadlineBucket)
				v, _ := json.Marshal(map[string]any{
					"agent_id": "r", "thread_id": event.NewID(), "display_id": event.NewID(), "run_id": run,
					"request_event_id": req, "event": "HumanInTheLoopTimeoutEvent", "event_id": event.NewID(),
					"timeout_seconds": 86400, "due": due,
				})
				key := fmt.Sprintf("%019d.%s.%s", due, run, req)
				sc := store.Scope{Kind: store.ThreadScope, Class: class, ID: fmt.Sprint(engine.DeadlineScope, ".", bucket)}
				if err := st.Set(ctx, sc, key, v); err != nil {
					b.Error(err)
				}
				if _, done := indexed.LoadOrStore(bucket, true); !done { // once per bucket, as an engine does
					idx := store.Scope{Kind: store.ThreadScope, Class: class, ID: engine.DeadlineScope}
					if err := st.Set(ctx, idx, fmt.Sprint(bucket), []byte("1")); err != nil {
						b.Error(err)
					}
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	keys, err := engine.PendingDeadlines(ctx, st, class)
	if err != nil || len(keys) != n {
		b.Fatalf("%d deadlines stored (%v), want %d", len(keys), err, n)
	}
}

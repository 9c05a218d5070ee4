package agent_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/dispatch"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/topic"
	"github.com/saap-go/agent/internal/natsserver"
)

func TestZZTraceRun(t *testing.T) {
	if os.Getenv("ZZTRACE") == "" {
		t.Skip()
	}
	for _, mem := range []bool{false, true} {
		s, _ := natsserver.Start(natsserver.Options{Dir: t.TempDir()})
		defer s.Shutdown()
		c := client(t, s.URL())
		class := uniqueClass("Trace")
		done := make(chan string, 100)
		dsub, _ := c.Subscribe(context.Background(), "agent."+class+".*.*.*.*.display_event.StopEvent.*", "", func(m *bus.Msg) {
			tp, _ := topic.ParseAgent(m.Subject)
			done <- tp.Run
		})
		defer dsub.Unsubscribe()
		opts := []agent.Option{agent.WithNATS(s.URL()), agent.Standalone(), agent.Discoverable(false), silent()}
		if mem {
			opts = append(opts, agent.WithStore(dispatch.NewMemoryStore()))
		}
		startRunner(t, &linear{class: class}, opts...)
		nc, _ := nats.Connect(s.URL())
		type rec struct {
			t   time.Duration
			sub string
			n   int
		}
		var recs []rec
		var t0 time.Time
		ch := make(chan rec, 10000)
		sub, _ := nc.Subscribe(">", func(m *nats.Msg) { ch <- rec{time.Since(t0), m.Subject, len(m.Data)} })
		_ = nc.Flush()
		ctx := context.Background()
		for i := 0; i < 3; i++ {
			t0 = time.Now()
			run := newRun(class, "b")
			if err := publishErr(ctx, c, run, userMessage("hi"), nil); err != nil {
				t.Fatal(err)
			}
			for id := range done {
				if id == run.Run {
					break
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = sub.Unsubscribe()
		close(ch)
		for r := range ch {
			recs = append(recs, r)
		}
		fmt.Printf("=== mem=%v\n", mem)
		for _, r := range recs {
			fmt.Printf("%8.0fµs %5d %s\n", float64(r.t.Microseconds()), r.n, r.sub)
		}
	}
}

package memory_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/memory"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
	"github.com/saap-go/agent/vector"
)

// remembering is a chat agent that hands each turn's messages to the
// memory agent, as the reference's agents do at the end of a turn.
type remembering struct{ class, writer string }

func (a *remembering) Class() string { return a.class }

func (a *remembering) Steps() []*step.Step {
	return []*step.Step{step.New(func(ctx step.Context, m *event.UserMessageEvent) ([]event.Event, error) {
		r, err := hitl.StoreMemory(ctx.Run(), hitl.MemoryWriter{Class: a.writer, ID: "writer"}, m.User, m.Messages)
		if err != nil {
			return nil, err
		}
		return []event.Event{r, event.New[event.StopEvent]()}, nil
	}, step.Name("remember"), step.Emits((*event.MemoryStorageRequestedEvent)(nil), (*event.StopEvent)(nil)))}
}

func natsBus(t *testing.T) bus.Bus {
	if os.Getenv("NATS_URL") != "" {
		return bustest.NewExternalNATS(t)
	}
	return bustest.NewNATS(t)
}

// start runs a on b until the test ends.
func start(t *testing.T, ctx context.Context, a agent.Agent, b bus.Bus) {
	t.Helper()
	r, err := agent.New(a, agent.WithBus(b), agent.Standalone(), agent.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", r.Class(), err)
			}
		case <-time.After(time.Minute):
			t.Errorf("%s did not stop", r.Class())
		}
	})
	select {
	case <-r.Ready():
	case err := <-done:
		t.Fatalf("%s: %v", r.Class(), err)
	case <-ctx.Done():
		t.Fatalf("%s not ready", r.Class())
	}
}

// TestDelegationOverNATS: a chat agent delegates its turn to the memory
// agent (a Writer) over a real NATS server, the writer stores the user's
// statement in a persisted index, and the user, and only the user, recalls
// it in a later thread.
func TestDelegationOverNATS(t *testing.T) {
	t.Setenv("REDIS_URL", "") // run state in JetStream KV
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := natsBus(t)
	ix, err := vector.Open(t.TempDir())
	must(t, err)
	defer ix.Close()
	s := newService(t, ix)
	u := bustest.Unique()
	writer := &memory.Writer{Service: s, ClassName: "MemoryWriter" + u}
	caller := &remembering{class: "Chat" + u, writer: writer.Class()}

	stored := make(chan topic.Agent, 4)
	sub, err := b.Subscribe(ctx, "agent."+writer.Class()+".writer.*.*.*.control_event.StopEvent.*", "", func(m *bus.Msg) {
		at, _ := topic.ParseAgent(m.Subject)
		stored <- at
	})
	must(t, err)
	defer sub.Unsubscribe()
	start(t, ctx, writer, b)
	start(t, ctx, caller, b)

	at := topic.Agent{Class: caller.class, ID: "dev", Thread: event.NewID(), Display: event.NewID(), Run: event.NewID()}
	msg := userMessage(user("ada", "acme"), "Remember that my daughter's name is Grace")
	event.Stamp(msg)
	_, err = bus.PublishEvent(ctx, b, at, msg, nil)
	must(t, err)
	select {
	case w := <-stored:
		if w.Thread == at.Thread || w.Run == at.Run {
			t.Errorf("the writer ran on the caller's ids: %+v", w)
		}
	case <-ctx.Done():
		t.Fatal("the memory agent never finished")
	}
	got, err := s.Recall(ctx, ada, memory.Query{Text: "what is my daughter's name"})
	must(t, err)
	if len(got.User) != 1 || got.User[0].Text != "Remember that my daughter's name is Grace" || got.User[0].Origin.ThreadID != at.Thread || got.User[0].Origin.RunID != at.Run {
		t.Fatalf("ada recalled %+v", got.User)
	}
	other, err := s.Recall(ctx, bob, memory.Query{Text: "what is my daughter's name"})
	must(t, err)
	if len(other.User)+len(other.Organization) != 0 {
		t.Fatalf("bob recalled %v %v", texts(other.User), texts(other.Organization))
	}
}

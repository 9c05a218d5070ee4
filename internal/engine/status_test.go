package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

type (
	// Begin starts a lifecycle run; Proceed lets it go on.
	Begin   struct{ event.StartEvent }
	Proceed struct{ event.ControlEvent }
	Closed  struct{ event.StopEvent }
)

func init() {
	event.MustRegister[Begin]()
	event.MustRegister[Proceed]()
	event.MustRegister[Closed]()
}

func statusOf(t *testing.T, h *agenttest.Harness, run string) status.Record {
	t.Helper()
	st, err := h.Status(run)
	if err != nil {
		t.Fatalf("Status(%s): %v", run, err)
	}
	return st
}

// A run's status follows it through every state: pending after a start
// that runs no step, running while a step runs, waiting with the
// question's deadline, completed; and failed with the exception's message
// when a step fails after the question timed out.
func TestStatusTransitions(t *testing.T) {
	var h *agenttest.Harness
	var inside status.Record
	ask := step.New(func(ctx step.Context, _ *Begin, _ *Proceed) (*event.HumanInTheLoopInputRequestEvent, error) {
		st, err := h.Status(ctx.Run().RunID)
		if err != nil {
			return nil, err
		}
		inside = st
		req := &event.HumanInTheLoopInputRequestEvent{}
		req.Question, req.HITLType = "Go on?", "input"
		req.Topic = &event.Topic{EventType: event.Str(string(topic.Control)), EventName: event.Str("HumanInTheLoopInputResponseEvent")}
		return req, hitl.SetTimeout(req, time.Minute)
	}, step.Name("ask"))
	done := step.New(func(ctx step.Context, r *event.HumanInTheLoopInputResponseEvent) (*Closed, error) {
		return &Closed{}, nil
	}, step.Name("done"))
	late := step.New(func(ctx step.Context, r *event.HumanInTheLoopTimeoutEvent) (*Closed, error) {
		return nil, step.Userf("nobody answered")
	}, step.Name("late"))
	h = agenttest.New(t, partial(t, "Lifecycle", ask, done, late))

	if _, err := h.Status("nope"); err == nil {
		t.Fatal("Status of an unknown run succeeded")
	}
	res := h.Start(&Begin{})
	run := res.RunID()
	st := statusOf(t, h, run)
	agenttest.Equal(t, st.State, status.Pending)
	agenttest.Equal(t, [4]string{st.Class, st.Run, st.AgentID, st.Thread}, [4]string{"Lifecycle", run, res.Topic().ID, res.Topic().Thread})

	h.Send(res, &Proceed{})
	agenttest.Equal(t, inside.State, status.Running)
	st = statusOf(t, h, run)
	agenttest.Equal(t, st.State, status.Waiting)
	req := res.Get("HumanInTheLoopInputRequestEvent")[0].(*event.HumanInTheLoopInputRequestEvent)
	if st.Question == nil || st.Question.EventID != req.EventID || st.Question.Event != "HumanInTheLoopInputRequestEvent" {
		t.Fatalf("question = %+v, want request %s", st.Question, req.EventID)
	}
	wantDue := time.Unix(0, req.CreatedAt).Add(time.Minute).UTC()
	if st.Question.Deadline == nil || !st.Question.Deadline.Equal(wantDue) {
		t.Fatalf("deadline = %v, want %v", st.Question.Deadline, wantDue)
	}

	h.Send(res, &event.HumanInTheLoopInputResponseEvent{Response: "yes", RequestEvent: req})
	agenttest.Equal(t, res.Ended(), "completed")
	agenttest.Equal(t, statusOf(t, h, run).State, status.Completed)

	// A second run lets its question time out; the timeout's step fails.
	res2 := h.Start(&Begin{})
	h.Send(res2, &Proceed{})
	agenttest.Equal(t, statusOf(t, h, res2.RunID()).State, status.Waiting)
	h.Advance(2 * time.Minute)
	agenttest.Equal(t, res2.Ended(), "crashed")
	st = statusOf(t, h, res2.RunID())
	agenttest.Equal(t, st.State, status.Failed)
	agenttest.Equal(t, st.Error, "nobody answered")
	// The first run's record is untouched.
	agenttest.Equal(t, statusOf(t, h, run).State, status.Completed)
}

// Runs list by class and by thread, filtered by state, a page at a time.
func TestListRunsPaging(t *testing.T) {
	finish := step.New(func(ctx step.Context, _ *Begin, _ *Proceed) (*Closed, error) { return &Closed{}, nil }, step.Name("finish"))
	h := agenttest.New(t, partial(t, "Lister", finish))
	var pending, completed, inThread []string
	for i := range 7 {
		opts := []agenttest.RunOption{agenttest.RunID(fmt.Sprintf("run%02d", i))}
		if i%3 == 0 {
			opts = append(opts, agenttest.Thread("shared"))
		}
		res := h.Start(&Begin{}, opts...)
		if i%2 == 0 {
			h.Send(res, &Proceed{})
			completed = append(completed, res.RunID())
		} else {
			pending = append(pending, res.RunID())
		}
		if i%3 == 0 {
			inThread = append(inThread, res.RunID())
		}
	}
	pages := func(q status.Query) (ids []string, n int) {
		t.Helper()
		for {
			page, err := h.ListRuns(q)
			if err != nil {
				t.Fatal(err)
			}
			n++
			if len(page.Runs) > q.Limit && q.Limit > 0 {
				t.Fatalf("page of %d runs for limit %d", len(page.Runs), q.Limit)
			}
			for _, r := range page.Runs {
				ids = append(ids, r.Run)
			}
			if page.Next == "" {
				return ids, n
			}
			q.After = page.Next
		}
	}
	all, n := pages(status.Query{Limit: 3})
	agenttest.Equal(t, len(all), 7)
	agenttest.Equal(t, n, 3)
	got, _ := pages(status.Query{Limit: 2, States: []status.State{status.Completed}})
	agenttest.Equal(t, got, completed)
	got, _ = pages(status.Query{Limit: 1, States: []status.State{status.Pending}})
	agenttest.Equal(t, got, pending)
	got, _ = pages(status.Query{Thread: "shared", Limit: 2})
	agenttest.Equal(t, got, inThread)
	// An exact page has no next page.
	page, err := h.ListRuns(status.Query{Limit: 7})
	if err != nil || len(page.Runs) != 7 || page.Next != "" {
		t.Fatalf("ListRuns(limit 7) = %d runs, next %q, %v; want 7 and no next", len(page.Runs), page.Next, err)
	}
	for _, q := range []status.Query{{States: []status.State{"paused"}}, {Limit: -1}, {Thread: "a.b"}} {
		if _, err := h.ListRuns(q); err == nil {
			t.Errorf("ListRuns(%+v) succeeded, want an error", q)
		}
	}
}

// Status and listing over the bus: any replica answers from the store.
func TestStatusOverTheBus(t *testing.T) {
	finish := step.New(func(ctx step.Context, _ *Begin, _ *Proceed) (*Closed, error) { return &Closed{}, nil }, step.Name("finish"))
	h := agenttest.New(t, partial(t, "Remote", finish))
	sub, err := status.Serve(t.Context(), h.Bus(), h.Store(), "Remote", quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	res := h.Start(&Begin{})
	st, err := status.Request(t.Context(), h.Bus(), "Remote", res.RunID())
	if err != nil {
		t.Fatal(err)
	}
	agenttest.Equal(t, st.State, status.Pending)
	h.Send(res, &Proceed{})
	page, err := status.RequestList(t.Context(), h.Bus(), "Remote", status.Query{States: []status.State{status.Completed}})
	if err != nil || len(page.Runs) != 1 || page.Runs[0].Run != res.RunID() {
		t.Fatalf("RequestRuns = %+v, %v; want the completed run", page, err)
	}
	if _, err := status.Request(t.Context(), h.Bus(), "Remote", "unknown"); !errors.Is(err, status.ErrNotFound) {
		t.Fatalf("status of an unknown run: %v, want ErrNoStatus", err)
	}
	if _, err := status.RequestList(t.Context(), h.Bus(), "Remote", status.Query{States: []status.State{"bogus"}}); err == nil ||
		!strings.Contains(err.Error(), "bogus") {
		t.Fatalf("a bad query: %v, want an error naming it", err)
	}
}

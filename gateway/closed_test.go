package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/topic"
)

// settleQuestions reports every question settled and every run ended.
type settleQuestions struct {
	*gateway.MemoryQuestions
	settled chan string
	ended   chan string
}

func newSettleQuestions() settleQuestions {
	return settleQuestions{gateway.NewMemoryQuestions(), make(chan string, 16), make(chan string, 16)}
}

func (s settleQuestions) Settle(ctx context.Context, id string, from, to gateway.QuestionState) (gateway.Question, error) {
	q, err := s.MemoryQuestions.Settle(ctx, id, from, to)
	s.settled <- id
	return q, err
}

func (s settleQuestions) EndRun(ctx context.Context, thread, class, run string) error {
	err := s.MemoryQuestions.EndRun(ctx, thread, class, run)
	s.ended <- run
	return err
}

func await(t *testing.T, ch <-chan string, want, what string) {
	t.Helper()
	ctx := ctxTimeout(t)
	for {
		select {
		case got := <-ch:
			if got == want {
				return
			}
		case <-ctx.Done():
			t.Fatalf("the gateway did not learn of the %s", what)
		}
	}
}

// runOf is where the run that asked req publishes.
func runOf(req map[string]any) topic.Agent {
	tp := req["topic"].(map[string]any)
	return topic.Agent{Class: tp["agent_class"].(string), ID: tp["agent_id"].(string), Thread: tp["thread_id"].(string),
		Display: tp["display_id"].(string), Run: tp["run_id"].(string)}
}

// testHITLTimeoutAndEndWatched: the gateway's watch learns of a wait's
// timeout event (a control event no client follows) and of an exception
// ending a run; an answer to either question then gets 409 naming why and
// is not published, and the thread's next chat message starts a new run.
func testHITLTimeoutAndEndWatched(t *testing.T, nb newBusFunc) {
	qs := newSettleQuestions()
	e := newEnv(t, nb, func(c *gateway.Config) { c.Questions = qs })
	stop := e.gw.WatchQuestionsOnce(ctxTimeout(t))
	defer stop()

	for _, c := range []struct {
		name, detail string
		end          func(at topic.Agent, id string) (<-chan string, string)
	}{
		{"timeout", "timed out", func(at topic.Agent, id string) (<-chan string, string) {
			x := &event.HumanInTheLoopTimeoutEvent{}
			x.RequestEventID, x.TimeoutSeconds = id, 30
			e.agent.emit(ctxTimeout(t), at, x)
			return qs.settled, id
		}},
		{"exception", "has ended", func(at topic.Agent, _ string) (<-chan string, string) {
			e.agent.emit(ctxTimeout(t), at, &event.ExceptionEvent{Message: "gave up", HTTPStatusCode: 500})
			return qs.ended, at.Run
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			thread, req := ask(t, e, tokenAlice)
			at := runOf(req)
			ch, key := c.end(at, req["event_id"].(string))
			await(t, ch, key, c.name)

			resp := post(t, e.srv, tokenAlice, answerPath+"?thread_id="+thread, answerBody(t, req, "blue", nil))
			if d := detailOf(t, resp); resp.StatusCode != http.StatusConflict || !strings.Contains(d, c.detail) {
				t.Errorf("answer: %d %q, want 409 saying %q", resp.StatusCode, d, c.detail)
			}
			// The chat flow finds no open question: a new run starts.
			resp = post(t, e.srv, tokenAlice, blockPath+"?thread_id="+thread, `{"messages":[{"role":"user","content":"blue"}]}`)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("next message: status %d", resp.StatusCode)
			}
			got := e.agent.wait(t, ctxTimeout(t))
			if got.subject.Name != "UserMessageEvent" || got.subject.Run == at.Run {
				t.Errorf("agent got %s of run %s, want a new run's start (the refused answer must not be published)", got.subject.Name, got.subject.Run)
			}
		})
	}
}

// testChatFlowAgentEndpoint: in a thread with an open input question, the
// next user message sent to the agent endpoint answers it, in the asking
// run; once answered, the next message starts a new run.
func testChatFlowAgentEndpoint(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	thread, req := ask(t, e, tokenAlice)
	at := runOf(req)

	// Bob is no member of the thread: 403, nothing published.
	if resp := post(t, e.srv, tokenBob, blockPath+"?thread_id="+thread, `{"messages":[{"role":"user","content":"red"}]}`); resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob: status %d, want 403", resp.StatusCode)
	}
	resp := post(t, e.srv, tokenAlice, blockPath+"?thread_id="+thread, `{"messages":[{"role":"user","content":"ask"},{"role":"user","content":"blue"}]}`)
	if body := decodeJSON(t, resp.Body); resp.StatusCode != http.StatusOK || !strings.Contains(fmt.Sprint(body["output_messages"]), "You chose blue") {
		t.Fatalf("answer by message: %d %v", resp.StatusCode, body)
	}
	got := e.agent.wait(t, ctxTimeout(t))
	if got.subject.Name != "HumanInTheLoopInputResponseEvent" || got.subject.Run != at.Run || got.subject.Thread != thread {
		t.Errorf("agent got %s on %v, want the response in run %s", got.subject.Name, got.subject, at.Run)
	}
	resp = post(t, e.srv, tokenAlice, blockPath+"?thread_id="+thread, msgs)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("next message: status %d", resp.StatusCode)
	}
	if got := e.agent.wait(t, ctxTimeout(t)); got.subject.Name != "UserMessageEvent" || got.subject.Run == at.Run {
		t.Errorf("after the answer the agent got %s of run %s, want a new run's start", got.subject.Name, got.subject.Run)
	}
}

package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/saap-go/agent/event"
)

// claimedRequest is what a client's answer says about the request it
// answers. Only EventID selects the question; the topic fields, when the
// client sends them, must agree with what the gateway recorded.
type claimedRequest struct {
	EventID string `json:"event_id"`
	Topic   *struct {
		Class   *string `json:"agent_class"`
		ID      *string `json:"agent_id"`
		Thread  *string `json:"thread_id"`
		Display *string `json:"display_id"`
		Run     *string `json:"run_id"`
		Name    *string `json:"event_name"`
	} `json:"topic"`
}

// readClaim reads request_event of a HITL response body.
func readClaim(body map[string]json.RawMessage) (claimedRequest, error) {
	raw, ok := body["request_event"]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return claimedRequest{}, badRequest("request_event", "request_event: required (the HITL request being answered)")
	}
	var c claimedRequest
	if err := json.Unmarshal(raw, &c); err != nil {
		return claimedRequest{}, badRequest("request_event", "request_event: must be the HITL request event object: %v", err)
	}
	if c.EventID == "" {
		return claimedRequest{}, badRequest("request_event.event_id", "request_event.event_id: required (names the question answered)")
	}
	return c, nil
}

func (c claimedRequest) thread() string {
	if c.Topic == nil || c.Topic.Thread == nil {
		return ""
	}
	return *c.Topic.Thread
}

// matches reports whether every topic field the client sent agrees with q.
func (c claimedRequest) matches(q Question) bool {
	if c.Topic == nil {
		return true
	}
	for _, f := range []struct {
		claim *string
		want  string
	}{
		{c.Topic.Class, q.Class}, {c.Topic.ID, q.AgentID}, {c.Topic.Thread, q.Thread},
		{c.Topic.Display, q.Display}, {c.Topic.Run, q.Run}, {c.Topic.Name, q.Response},
	} {
		if f.claim != nil && *f.claim != f.want {
			return false
		}
	}
	return true
}

// noQuestion is the one answer for a question that is unknown, belongs to
// another thread or run, or is claimed with a topic that is not its own: the
// same status and text in every case, so a caller cannot probe which ids
// exist.
func noQuestion(eventID, thread string) error {
	return &requestError{status: http.StatusNotFound, field: "request_event",
		msg: fmt.Sprintf("request_event: no question %q is waiting for an answer in thread %s", eventID, thread)}
}

// closedQuestion is the answer for a question of the caller's thread that
// can no longer be answered.
func closedQuestion(q Question, ended bool) error {
	msg := fmt.Sprintf("request_event: question %s was already answered", q.EventID)
	// The question's own fate first: a timed-out question's run often
	// ends right after, in a step that handles the timeout.
	switch {
	case q.State == QuestionAnswered:
	case q.State == QuestionExpired:
		msg = fmt.Sprintf("request_event: question %s timed out: the agent no longer waits for an answer", q.EventID)
	case ended:
		msg = fmt.Sprintf("request_event: question %s can no longer be answered: run %s of %s has ended", q.EventID, q.Run, q.Class)
	}
	return &requestError{status: http.StatusConflict, field: "request_event", msg: msg}
}

// question finds the question eventID of thread that the client's claim
// names, checking that it can still be answered. The caller has checked
// that the user is a member of thread.
func (g *Gateway) question(ctx context.Context, thread string, c claimedRequest) (Question, error) {
	q, ok, err := g.questions.Question(ctx, c.EventID)
	if err != nil {
		return Question{}, fmt.Errorf("gateway: questions: %w", err)
	}
	if !ok || q.Thread != thread || !c.matches(q) {
		return Question{}, noQuestion(c.EventID, thread)
	}
	if err := g.answerable(ctx, q); err != nil {
		return Question{}, err
	}
	return q, nil
}

// answerable returns a 409 error when q is not open or its run has ended.
func (g *Gateway) answerable(ctx context.Context, q Question) error {
	ended, err := g.questions.RunEnded(ctx, q.Thread, q.Class, q.Run)
	if err != nil {
		return fmt.Errorf("gateway: questions: %w", err)
	}
	if ended || q.State != QuestionOpen {
		return closedQuestion(q, ended)
	}
	return nil
}

// claim settles the question a HITL response answers before it is
// published, so that of two concurrent answers (on any replica) only one
// reaches the agent. It returns the question's id for release, or "" when d
// is no HITL response.
func (g *Gateway) claim(ctx context.Context, d *delivery) (string, error) {
	if !event.IsHITLResponse(d.event) && !event.IsBITLResponse(d.event) {
		return "", nil
	}
	id := d.question
	if id == "" {
		// A response built elsewhere (the chat flow): read the id of the
		// request it embeds and hold it to the same rules.
		data, err := event.Marshal(d.event)
		if err != nil {
			return "", fmt.Errorf("gateway: encode %s: %w", d.target.Name, err)
		}
		var body struct {
			Req struct {
				EventID string `json:"event_id"`
			} `json:"request_event"`
		}
		_ = json.Unmarshal(data, &body)
		if id = body.Req.EventID; id == "" {
			return "", noQuestion("", d.target.Thread)
		}
	}
	q, ok, err := g.questions.Question(ctx, id)
	if err != nil {
		return "", fmt.Errorf("gateway: questions: %w", err)
	}
	t := d.target
	if !ok || q.Thread != t.Thread || q.Class != t.Class || q.AgentID != t.ID || q.Run != t.Run {
		return "", noQuestion(id, t.Thread)
	}
	if err := g.answerable(ctx, q); err != nil {
		return "", err
	}
	if q, err = g.questions.Settle(ctx, id, QuestionOpen, QuestionAnswered); err != nil {
		var se *StateError
		if errors.As(err, &se) {
			return "", closedQuestion(q, false)
		}
		return "", fmt.Errorf("gateway: questions: %w", err)
	}
	return id, nil
}

// release reopens a question whose answer could not be published.
func (g *Gateway) release(ctx context.Context, id string) {
	if id == "" {
		return
	}
	if _, err := g.questions.Settle(context.WithoutCancel(ctx), id, QuestionAnswered, QuestionOpen); err != nil {
		g.log.Warn("gateway: cannot reopen question after a failed publish", "question", id, "err", err)
	}
}

// observe records what a display event tells about questions: a HITL
// request opens a question, a stop or an exception ends its run. It runs
// before the event reaches the client, so a client that answers at once
// finds its question recorded.
func (g *Gateway) observe(ctx context.Context, s *seen) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	t := s.topic
	switch {
	case event.IsHITLRequest(s.event):
		hr, ok := as[event.HumanInTheLoopRequestEvent](s)
		if !ok {
			return
		}
		q := Question{EventID: hr.EventID, Class: t.Class, AgentID: t.ID, Thread: t.Thread, Display: t.Display,
			Run: t.Run, HITLType: hr.HITLType, Request: s.raw}
		if tp := hr.Topic; tp != nil {
			// The request's topic routes the answer, as in the reference; it
			// may name another run than the subject (a delegate asking
			// through its caller), but never another thread.
			set := func(dst *string, v *string) {
				if v != nil && *v != "" {
					*dst = *v
				}
			}
			if tp.ThreadID != nil && *tp.ThreadID != t.Thread {
				g.log.Warn("gateway: ignoring a HITL request whose topic names another thread", "subject", t, "thread", *tp.ThreadID)
				return
			}
			set(&q.Class, tp.AgentClass)
			set(&q.AgentID, tp.AgentID)
			set(&q.Display, tp.DisplayID)
			set(&q.Run, tp.RunID)
			set(&q.Response, tp.EventName)
		}
		if q.EventID == "" || q.Response == "" {
			return
		}
		if err := g.questions.Ask(ctx, q); err != nil {
			g.log.Error("gateway: cannot record a HITL question", "question", q.EventID, "err", err)
		}
	case event.IsBITLRequest(s.event):
		if q, ok := g.botQuestion(s); ok {
			if err := g.questions.Ask(ctx, q); err != nil {
				g.log.Error("gateway: cannot record a BITL question", "question", q.EventID, "err", err)
			}
		}
	case event.IsStop(s.event), event.IsException(s.event):
		if err := g.questions.EndRun(ctx, t.Thread, t.Class, t.Run); err != nil {
			g.log.Error("gateway: cannot record the end of a run", "run", t.Run, "err", err)
		}
	case event.IsTimeout(s.event):
		var x struct {
			RequestEventID string `json:"request_event_id"`
		}
		if json.Unmarshal(s.raw, &x) != nil || x.RequestEventID == "" {
			return
		}
		if _, err := g.questions.Settle(ctx, x.RequestEventID, QuestionOpen, QuestionExpired); err != nil &&
			!errors.Is(err, ErrQuestionUnknown) && !errors.As(err, new(*StateError)) {
			g.log.Error("gateway: cannot record a HITL timeout", "question", x.RequestEventID, "err", err)
		}
	}
}

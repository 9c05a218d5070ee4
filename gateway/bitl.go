package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
)

// hitlTypeBot is the HITLType the gateway records for a bot-in-the-loop
// question (the request has no hitl_type of its own).
const hitlTypeBot = "bot"

// botQuestion reads the question a BITL request asks. Its topic, which the
// agent's runtime completes, routes the answer.
func (g *Gateway) botQuestion(s *seen) (Question, bool) {
	br, ok := as[event.BotInTheLoopRequestEvent](s)
	if !ok || br.EventID == "" {
		return Question{}, false
	}
	t := s.topic
	q := Question{EventID: br.EventID, Class: t.Class, AgentID: t.ID, Thread: t.Thread, Display: t.Display,
		Run: t.Run, Response: event.Name(&event.BotInTheLoopResponseEvent{}), HITLType: hitlTypeBot, Request: s.raw}
	if tp := br.Topic; tp != nil {
		if tp.ThreadID != nil && *tp.ThreadID != "" && *tp.ThreadID != t.Thread {
			g.log.Warn("gateway: ignoring a BITL request whose topic names another thread", "subject", t, "thread", *tp.ThreadID)
			return Question{}, false
		}
		set := func(dst *string, v *string) {
			if v != nil && *v != "" {
				*dst = *v
			}
		}
		set(&q.Class, tp.AgentClass)
		set(&q.AgentID, tp.AgentID)
		set(&q.Display, tp.DisplayID)
		set(&q.Run, tp.RunID)
		set(&q.Response, tp.EventName)
	}
	return q, true
}

// askBot hands a recorded BITL question to the configured Bot.
func (g *Gateway) askBot(ctx context.Context, s *seen) {
	br, ok := as[event.BotInTheLoopRequestEvent](s)
	if !ok {
		return
	}
	// A few tries with a growing pause ride over a channel's brief outage;
	// a question the channel never takes still ends with the run's
	// timeout, if it has one.
	pause := time.Second
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := g.cfg.Bot.Ask(actx, br)
		cancel()
		if err == nil {
			return
		}
		if attempt == botAttempts || ctx.Err() != nil {
			g.log.Error("gateway: the bot channel did not take a question", "question", br.EventID, "run", s.topic.Run,
				"attempts", attempt, "err", err)
			return
		}
		g.log.Warn("gateway: the bot channel did not take a question; trying again", "question", br.EventID, "err", err)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		pause *= 2
	}
}

// botAttempts is how often the gateway offers a question to its Bot.
const botAttempts = 3

// serveBotAnswer accepts a bot channel's answer, signed with the shared
// secret, and publishes it into the asking run as a
// BotInTheLoopResponseEvent: the same open-question checks as a human's
// answer, without thread membership (the signature vouches for the bot).
func (g *Gateway) serveBotAnswer(w http.ResponseWriter, r *http.Request) {
	if g.botVerifier == nil {
		writeError(w, http.StatusNotFound, "bot answers are not enabled on this gateway (no bot secret configured)", "")
		return
	}
	addr := clientAddr(r)
	if ok, wait := g.limits.authAllowed(addr, g.now()); !ok {
		g.fail(w, authThrottled(wait))
		return
	}
	body, err := g.readBody(w, r)
	if err != nil {
		g.fail(w, err)
		return
	}
	if err := g.botVerifier.Verify(r.Header, body); err != nil {
		g.limits.authFailed(addr, g.now())
		writeError(w, http.StatusUnauthorized, err.Error(), "signature")
		return
	}
	markAuthenticated(r.Context())
	var a hitl.WebhookAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("body: must be a bot answer object: %v", err), "body")
		return
	}
	for _, f := range []struct{ name, v string }{
		{"request_event_id", a.RequestEventID}, {"responder.user_id", a.Responder.UserID}, {"responder.user_name", a.Responder.UserName},
	} {
		if f.v == "" {
			writeError(w, http.StatusBadRequest, f.name+": required", f.name)
			return
		}
	}
	ctx := r.Context()
	q, ok, err := g.questions.Question(ctx, a.RequestEventID)
	if err != nil {
		g.fail(w, fmt.Errorf("gateway: questions: %w", err))
		return
	}
	if !ok || q.HITLType != hitlTypeBot {
		writeError(w, http.StatusNotFound, fmt.Sprintf("request_event_id: no bot question %q is waiting for an answer", a.RequestEventID), "request_event_id")
		return
	}
	req, err := event.UnmarshalAs[event.BotInTheLoopRequestEvent](q.Request)
	if err != nil {
		g.fail(w, fmt.Errorf("gateway: recorded bot question %s: %w", q.EventID, err))
		return
	}
	resp := event.New[event.BotInTheLoopResponseEvent]()
	resp.Response, resp.RequestEvent, resp.Responder = a.Response, req, &a.Responder
	d := &delivery{
		event:    event.Stamp(resp),
		target:   agentTopic(q.Class, q.AgentID, q.Thread, q.Display, q.Run, q.Response),
		question: q.EventID,
	}
	if err := g.publish(ctx, d); err != nil {
		g.fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "accepted", "event_id": resp.EventID, "run_id": q.Run})
}

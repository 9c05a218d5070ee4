package hitl_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
)

var ada = &event.UserIdentity{ID: "ada", Name: "Ada", Email: "ada@example.com", Roles: []string{}}

func TestAskBot(t *testing.T) {
	req, err := hitl.AskBot("Ship it?", ada, map[string]string{"channel_id": "C1"}, hitl.Timeout(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if req.Question != "Ship it?" || string(req.ChannelConfig) != `{"channel_id":"C1"}` || req.Topic == nil ||
		*req.Topic.EventName != "BotInTheLoopResponseEvent" || *req.Topic.EventType != "control_event" || req.Topic.RunID != nil {
		t.Errorf("request %+v topic %+v", req, req.Topic)
	}
	if d, ok := hitl.TimeoutOf(req); !ok || d != 90*time.Second {
		t.Errorf("timeout %v %v, want 90s", d, ok)
	}
	for name, f := range map[string]func() error{
		"blank question": func() error { _, err := hitl.AskBot(" ", ada, json.RawMessage(`{}`)); return err },
		"no user":        func() error { _, err := hitl.AskBot("q", nil, json.RawMessage(`{}`)); return err },
		"no channel":     func() error { _, err := hitl.AskBot("q", ada, nil); return err },
		"bad channel":    func() error { _, err := hitl.AskBot("q", ada, json.RawMessage(`{`)); return err },
		"bad timeout":    func() error { _, err := hitl.AskBot("q", ada, json.RawMessage(`{}`), hitl.Timeout(0)); return err },
	} {
		if err := f(); !errors.Is(err, hitl.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// TestWebhook: the question arrives signed; the receiver's Verifier takes
// it once, refuses it replayed, with another secret, or too old.
func TestWebhook(t *testing.T) {
	secret := []byte("shared")
	now := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	type got struct {
		h    http.Header
		body []byte
	}
	arrived := make(chan got, 1)
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		arrived <- got{r.Header.Clone(), b}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "channel says no")
	}))
	defer srv.Close()
	req, err := hitl.AskBot("Ship it?", ada, map[string]string{"channel_id": "C1"})
	if err != nil {
		t.Fatal(err)
	}
	req.EventID = "6b0e6e5d48b5f4f7c0651103"
	wh := &hitl.Webhook{URL: srv.URL, Secret: secret, Now: func() time.Time { return now }}
	if err := wh.Ask(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	g := <-arrived
	var q hitl.WebhookQuestion
	if err := json.Unmarshal(g.body, &q); err != nil {
		t.Fatal(err)
	}
	if q.RequestEventID != req.EventID || q.Question != "Ship it?" || q.User.ID != "ada" || !strings.Contains(string(q.RequestEvent), `"_event_name":"BotInTheLoopRequestEvent"`) {
		t.Errorf("question %+v", q)
	}
	if g.h.Get(hitl.TimestampHeader) != "1796108400" || g.h.Get(hitl.SignatureHeader) != hitl.Sign(secret, now, g.body) {
		t.Errorf("headers %v", g.h)
	}

	v := &hitl.Verifier{Secret: secret, Now: func() time.Time { return now.Add(time.Minute) }}
	if err := v.Verify(g.h, g.body); err != nil {
		t.Fatalf("first delivery: %v", err)
	}
	for name, c := range map[string]struct {
		v    *hitl.Verifier
		body []byte
		want string
	}{
		"replay":          {v, g.body, "before"},
		"other secret":    {&hitl.Verifier{Secret: []byte("other"), Now: v.Now}, g.body, "does not match"},
		"changed body":    {&hitl.Verifier{Secret: secret, Now: v.Now}, append([]byte(" "), g.body...), "does not match"},
		"too old":         {&hitl.Verifier{Secret: secret, Now: func() time.Time { return now.Add(6 * time.Minute) }}, g.body, "replay window"},
		"from the future": {&hitl.Verifier{Secret: secret, Now: func() time.Time { return now.Add(-6 * time.Minute) }}, g.body, "replay window"},
	} {
		err := c.v.Verify(g.h, c.body)
		if !errors.Is(err, hitl.ErrSignature) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal saying %q", name, err, c.want)
		}
	}

	status = http.StatusServiceUnavailable
	if err := wh.Ask(context.Background(), req); err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "channel says no") {
		t.Errorf("refused by the channel: %v", err)
	}
	<-arrived
	if err := (&hitl.Webhook{URL: srv.URL}).Ask(context.Background(), req); err == nil {
		t.Error("a webhook without a secret posted")
	}
}

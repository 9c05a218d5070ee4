package replaytest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/llm"
)

// StreamText streams p's answer to Question, checks it is the recorded
// text answer every provider's text fixture holds ("The capital", " of
// Switzerland", " is Bern.", ending with a stop event), and returns the
// event kinds and the first model an event named.
func StreamText(t *testing.T, p llm.Provider) (kinds []llm.EventKind, model string) {
	t.Helper()
	s, err := p.Stream(context.Background(), Question())
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for s.Next() {
		ev := s.Event()
		kinds = append(kinds, ev.Kind)
		if ev.Kind == llm.EventText {
			texts = append(texts, ev.Text)
		}
		if ev.Model != "" && model == "" {
			model = ev.Model
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if d := cmp.Diff([]string{"The capital", " of Switzerland", " is Bern."}, texts); d != "" {
		t.Errorf("text deltas (-want +got):\n%s", d)
	}
	if len(kinds) == 0 || kinds[len(kinds)-1] != llm.EventStop {
		t.Errorf("events end with %v, want stop", kinds)
	}
	return kinds, model
}

// Cancel checks that a stream cancelled after its first event ends with
// context.Canceled: open builds the provider for a base URL, and chunk is
// the provider's wire form of a first text event "hi", after which the
// server holds the connection open.
func Cancel(t *testing.T, chunk string, open func(url string) (llm.Provider, error)) {
	t.Helper()
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(chunk))
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	}))
	defer srv.Close()
	p, err := open(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := p.Stream(ctx, Question())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Next() || s.Event().Text != "hi" {
		t.Fatalf("first event = %+v, err %v", s.Event(), s.Err())
	}
	<-started
	cancel()
	for s.Next() {
	}
	if !errors.Is(s.Err(), context.Canceled) {
		t.Errorf("Err after cancel = %v, want context.Canceled", s.Err())
	}
	_ = s.Close()
}

// Unreachable checks that a provider pointed at a port nothing listens on
// fails with ErrUnavailable.
func Unreachable(t *testing.T, open func(url string) (llm.Provider, error)) {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	p, err := open(url)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(context.Background(), Question())
	if !errors.Is(err, &llm.Error{Kind: llm.ErrUnavailable}) {
		t.Errorf("Stream to a closed port: %v, want ErrUnavailable", err)
	}
}

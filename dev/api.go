package dev

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

//go:embed console
var consoleFiles embed.FS

// handler serves the console and its API under /dev/ and the gateway
// everywhere else.
func (s *Server) handler() http.Handler {
	m := http.NewServeMux()
	static, _ := fs.Sub(consoleFiles, "console")
	m.Handle("GET /dev/", http.StripPrefix("/dev/", http.FileServerFS(static)))
	m.HandleFunc("GET /dev/api/info", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"nats_url": s.natsURL, "classes": s.classes})
	})
	m.HandleFunc("GET /dev/api/classes", s.serveClasses)
	m.HandleFunc("GET /dev/api/events", s.serveEvents)
	m.HandleFunc("GET /dev/api/runs/{run}", s.serveRun)
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/dev/", http.StatusFound)
	})
	m.Handle("/", s.gw)
	return m
}

// serveClasses answers the discovered classes' discovery answers, sorted
// by class.
func (s *Server) serveClasses(w http.ResponseWriter, _ *http.Request) {
	classes := s.gw.Classes()
	out := make([]*event.AgentClassDiscoveryResponseEvent, 0, len(classes))
	for _, c := range classes {
		out = append(out, c.Response)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AgentClass < out[j].AgentClass })
	writeJSON(w, http.StatusOK, out)
}

// Event is one event as the console and the saap command show it: where
// it travelled and the event itself.
type Event struct {
	Subject string          `json:"subject"`
	Class   string          `json:"agent_class"`
	ID      string          `json:"agent_id"`
	Thread  string          `json:"thread_id"`
	Display string          `json:"display_id"`
	Run     string          `json:"run_id"`
	Type    string          `json:"event_type"` // control_event or display_event
	Name    string          `json:"event_name"`
	Parents []string        `json:"parents,omitempty"`
	Time    time.Time       `json:"time"`
	Event   json.RawMessage `json:"event"`
	// Step is the step that produced the event, Trigger the id of the
	// event it ran on, and Rerun whether the engine ran it again, as the
	// engine's headers say (bus.HeaderStep and its kin); empty for events
	// from outside a step.
	Step    string `json:"step,omitempty"`
	Trigger string `json:"trigger_id,omitempty"`
	Rerun   bool   `json:"rerun,omitempty"`
}

// eventOf describes a message of an agent subject, or reports false for
// another subject or an undecodable event.
func eventOf(subject string, h bus.Header, data []byte, at time.Time) (Event, bool) {
	t, err := topic.ParseAgent(subject)
	if err != nil {
		return Event{}, false
	}
	var head struct {
		Parents []string `json:"_parent_event_names"`
	}
	if json.Unmarshal(data, &head) != nil {
		return Event{}, false
	}
	return Event{Subject: subject, Class: t.Class, ID: t.ID, Thread: t.Thread, Display: t.Display, Run: t.Run,
		Type: string(t.Type), Name: t.Name, Parents: head.Parents, Time: at, Event: data,
		Step: h.Get(bus.HeaderStep), Trigger: h.Get(bus.HeaderTrigger), Rerun: h.Get(bus.HeaderRerun) != ""}, true
}

// serveEvents streams every agent event published from now on as
// Server-Sent Events, one `data: <Event JSON>` each.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch := make(chan Event, 1024)
	sub, err := s.bus.Subscribe(r.Context(), topic.AllAgentEvents(), "", func(m *bus.Msg) {
		if e, ok := eventOf(m.Subject, m.Header, m.Data, time.Now()); ok {
			select {
			case ch <- e:
			default: // a stalled browser must not hold the bus
			}
		}
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer sub.Unsubscribe()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, ": events\n\n")
	fl.Flush()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			_, err = fmt.Fprint(w, ": keep-alive\n\n")
		case e := <-ch:
			data, _ := json.Marshal(e)
			_, err = fmt.Fprintf(w, "data: %s\n\n", data)
		}
		if err != nil {
			return
		}
		fl.Flush()
	}
}

// serveRun answers the control events of a run stored in the streams of
// the discovered classes, in order.
func (s *Server) serveRun(w http.ResponseWriter, r *http.Request) {
	run := r.PathValue("run")
	if err := topic.ValidateToken("run_id", run); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"detail": err.Error()})
		return
	}
	var classes []string
	for _, c := range s.gw.Classes() {
		classes = append(classes, c.Name())
	}
	evs, err := RunEvents(r.Context(), s.bus, run, classes...)
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, bus.ErrNotFound) {
			status = http.StatusNotFound
		}
		writeJSON(w, status, map[string]string{"detail": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, evs)
}

// RunEvents returns the control events of run stored in the streams of
// classes, in stream order: the first class whose stream holds any. It
// wraps bus.ErrNotFound when none does.
func RunEvents(ctx context.Context, b bus.MessageReader, run string, classes ...string) ([]Event, error) {
	if err := topic.ValidateToken("run_id", run); err != nil {
		return nil, err
	}
	for _, class := range classes {
		filter, err := topic.AgentPattern{Class: class, Run: run}.Subject()
		if err != nil {
			return nil, err
		}
		msgs, err := bus.ReadAll(ctx, b, topic.StreamName(class), filter)
		if err != nil {
			return nil, err
		}
		var out []Event
		for _, m := range msgs {
			if e, ok := eventOf(m.Subject, m.Header, m.Data, m.Time); ok {
				out = append(out, e)
			}
		}
		if len(out) > 0 {
			return out, nil
		}
	}
	return nil, fmt.Errorf("run %s: no stored events in the streams of %s: %w", run, strings.Join(classes, ", "), bus.ErrNotFound)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status, data = http.StatusInternalServerError, []byte(`{"detail":"cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

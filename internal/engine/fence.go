package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// ErrRefused is wrapped by the error Process returns for an event that does
// not belong in the run its subject names: another agent id or thread than
// the run was started with, or an answer to a question the run has not
// asked or that was answered already. Handle dead-letters such an event
// with the error's text as the reason; nothing is published or stored.
var ErrRefused = errors.New("dispatch: event refused")

// MarkerIdentity is the marker that records a run's identity at its start:
// the agent id and thread of its start event, and the run's secret for
// deriving output ids. It is written once, so two start events racing for
// one run id with different threads cannot both win.
const MarkerIdentity = "identity"

// Run-context key prefix of the questions (HITL, BITL and AITL requests) a
// run has asked; the answered ones also have a marker answeredPrefix+id.
const (
	requestPrefix  = "_request."
	answeredPrefix = "answered."
)

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// runIdentity is what a run's start recorded: who may send into the run,
// and the secret its output ids are derived with.
type runIdentity struct {
	AgentID  string `json:"agent_id"`
	ThreadID string `json:"thread_id"`
	Key      string `json:"key"` // 32 lower-hex, from crypto/rand

	secret []byte // Key decoded
	key    [16]byte
}

func newIdentity(t topic.Agent, rnd io.Reader) (*runIdentity, string, error) {
	id := &runIdentity{AgentID: t.ID, ThreadID: t.Thread}
	k := id.key[:]
	if rnd == nil {
		_, _ = rand.Read(k) // never fails: it crashes the program instead
	} else if _, err := io.ReadFull(rnd, k); err != nil {
		return nil, "", fmt.Errorf("dispatch: run secret: %w", err)
	}
	id.secret = k
	// encoding/json's output, built in one allocation; Key is a part of it.
	var sb [256]byte
	buf := append(sb[:0], `{"agent_id":`...)
	buf = appendJSONString(buf, t.ID)
	buf = append(buf, `,"thread_id":`...)
	buf = appendJSONString(buf, t.Thread)
	buf = append(buf, `,"key":"`...)
	at := len(buf)
	buf = hex.AppendEncode(buf, k)
	buf = append(buf, `"}`...)
	raw := string(buf)
	id.Key = raw[at : at+2*len(k)]
	return id, raw, nil
}

func parseIdentity(run store.RunKey, raw string) (*runIdentity, error) {
	var id runIdentity
	if err := json.Unmarshal([]byte(raw), &id); err != nil {
		return nil, fmt.Errorf("dispatch: identity marker of run %s: %w", run.Run, err)
	}
	s, err := hex.DecodeString(id.Key)
	if err != nil || len(s) == 0 {
		return nil, fmt.Errorf("dispatch: identity marker of run %s has no valid key", run.Run)
	}
	id.secret = s
	return &id, nil
}

// admit checks that t names the run's agent id and thread. The reason names
// the subject's value only: the run's own ids are not for the sender.
func (id *runIdentity) admit(t topic.Agent) error {
	if t.ID != id.AgentID {
		return refuse("agent_id %q is not the agent id run %s was started with", t.ID, t.Run)
	}
	if t.Thread != id.ThreadID {
		return refuse("thread_id %q is not the thread run %s was started in", t.Thread, t.Run)
	}
	return nil
}

// claimIdentity records t's agent id and thread as the identity of run
// unless one is recorded, and returns the recorded identity. A different
// recorded identity refuses t.
func claimIdentity(ctx context.Context, s store.Store, run store.RunKey, t topic.Agent, rnd io.Reader) (*runIdentity, error) {
	id, _, err := claimIdentityNew(ctx, s, run, t, rnd)
	return id, err
}

// claimIdentityNew is claimIdentity that also reports whether this call
// recorded the identity (the run is new).
func claimIdentityNew(ctx context.Context, s store.Store, run store.RunKey, t topic.Agent, rnd io.Reader) (*runIdentity, bool, error) {
	mine, raw, err := newIdentity(t, rnd)
	if err != nil {
		return nil, false, err
	}
	cur, created, err := s.SetMarker(ctx, run, MarkerIdentity, raw)
	if err != nil {
		return nil, false, fmt.Errorf("dispatch: record run identity: %w", err)
	}
	if created {
		return mine, true, nil
	}
	id, err := parseIdentity(run, cur)
	if err != nil {
		return nil, false, err
	}
	if err := id.admit(t); err != nil {
		return nil, false, fmt.Errorf("start event refused, run %s exists: %w", run.Run, err)
	}
	return id, false, nil
}

// RecordIdentity records the agent id and thread of t as the identity of
// its run, as the run's start event does; events of the run with another
// agent id or thread are refused from then on. It is for runs whose state
// is seeded without a start event (tests, migrations). The run's secret is
// read from rnd, or from crypto/rand if rnd is nil (see WithRandom). It
// fails if the run was recorded with another identity.
func RecordIdentity(ctx context.Context, s store.Store, t topic.Agent, rnd io.Reader) error {
	_, err := claimIdentity(ctx, s, store.RunKey{Class: t.Class, Run: t.Run}, t, rnd)
	return err
}

// WithRandom makes the engine read the secrets of the runs it starts from
// r instead of crypto/rand. The secrets key the runs' output ids, so r must
// be unpredictable in production; tests pass a seeded source for
// reproducible ids. Reads are serialised.
func WithRandom(r io.Reader) Option {
	return func(e *Engine) { e.rnd = &lockedReader{r: r} }
}

type lockedReader struct {
	mu sync.Mutex
	r  io.Reader
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}

// loadIdentity reads the recorded identity of run; nil if none is.
func (e *Engine) loadIdentity(ctx context.Context, run store.RunKey) (*runIdentity, error) {
	raw, ok, err := e.store.Marker(ctx, run, MarkerIdentity)
	if err != nil {
		return nil, fmt.Errorf("dispatch: read run identity: %w", err)
	}
	if !ok {
		return nil, nil
	}
	return parseIdentity(run, raw)
}

// fenceTerminal refuses a stop or exception event that names a run started
// by another agent id or in another thread. A run without a recorded
// identity was never started here; its teardown harms nobody.
func (e *Engine) fenceTerminal(ctx context.Context, run store.RunKey, t topic.Agent) error {
	var id *runIdentity
	if r := e.cache.peek(run); r != nil {
		id = r.ident.Load()
	}
	if id == nil {
		var err error
		if id, err = e.loadIdentity(ctx, run); err != nil || id == nil {
			return err
		}
	}
	return id.admit(t)
}

// isQuestion reports whether ev asks something whose answer comes back into
// the run: a HITL, BITL or AITL request, or a durable timer (answered by
// its firing).
func isQuestion(ev event.Event) bool {
	return event.IsHITLRequest(ev) || event.IsBITLRequest(ev) || event.IsAITLRequest(ev) || event.IsTimerRequest(ev)
}

// isAnswer reports whether ev answers a question of the run: a HITL, BITL
// or AITL response, an AITL exception, a wait's timeout (one outcome per
// question: the first of answer and timeout wins), or a timer's firing.
func isAnswer(ev event.Event) bool {
	return event.IsHITLResponse(ev) || event.IsBITLResponse(ev) || event.IsAITLResponse(ev) ||
		event.IsAITLException(ev) || event.IsTimeout(ev) || event.IsTimerFired(ev)
}

// replyTopic is where the answer to a question goes, as recorded with the
// open question.
type replyTopic struct {
	Class   string `json:"agent_class"`
	AgentID string `json:"agent_id"`
	Thread  string `json:"thread_id"`
	Run     string `json:"run_id"`
	// Deadline is the key of the question's deadline, if it has a timeout.
	Deadline string `json:"deadline,omitempty"`
}

// openQuestion records q, about to be published by run on t, as an open
// question of the run, and its deadline if it carries a timeout. It is
// stored before q is published, so no answer can come before it.
func (e *Engine) openQuestion(ctx context.Context, r *runEntry, t topic.Agent, q event.Event) error {
	run := r.key
	dl, err := e.recordDeadline(ctx, r, t, q)
	if err != nil {
		return err
	}
	rt := replyTopic{Class: t.Class, AgentID: t.ID, Thread: t.Thread, Run: t.Run, Deadline: dl}
	if tp := topicField(q); tp != nil {
		set := func(dst *string, v *string) {
			if v != nil {
				*dst = *v
			}
		}
		set(&rt.Class, tp.AgentClass)
		set(&rt.AgentID, tp.AgentID)
		set(&rt.Thread, tp.ThreadID)
		set(&rt.Run, tp.RunID)
	}
	raw, err := json.Marshal(rt)
	if err != nil {
		return fmt.Errorf("dispatch: encode open question: %w", err)
	}
	if err := e.store.Set(ctx, run.RunContext(), requestPrefix+q.EventBase().EventID, raw); err != nil {
		return fmt.Errorf("dispatch: record open question %s: %w", q.EventBase().EventID, err)
	}
	if dl != "" {
		r.addDeadline(dl)
	}
	e.noteWaiting(ctx, r, t, q, dl)
	return nil
}

// acceptAnswer admits ev, an answer, if it answers a question that is open
// in the run, and closes the question: of two answers to one question only
// the first is accepted (a redelivery of it is the same answer).
func (e *Engine) acceptAnswer(ctx context.Context, run store.RunKey, t topic.Agent, ev event.Event) error {
	name, evID := event.Name(ev), ev.EventBase().EventID
	reqID, reqTopic := answerOf(ev)
	if reqID == "" {
		return refuse("%s %s of run %s names no request event id", name, evID, t.Run)
	}
	raw, ok, err := e.store.Get(ctx, run.RunContext(), requestPrefix+reqID)
	if err != nil {
		return fmt.Errorf("dispatch: read open question %s: %w", reqID, err)
	}
	if !ok {
		return refuse("%s %s answers request %s, which is not a question run %s asked", name, evID, reqID, t.Run)
	}
	var rt replyTopic
	if err := json.Unmarshal(raw, &rt); err != nil {
		return fmt.Errorf("dispatch: open question %s of run %s: %w", reqID, t.Run, err)
	}
	if reqTopic != nil {
		for _, f := range [...]struct {
			name     string
			got      *string
			recorded string
		}{
			{"agent_class", reqTopic.AgentClass, rt.Class},
			{"agent_id", reqTopic.AgentID, rt.AgentID},
			{"thread_id", reqTopic.ThreadID, rt.Thread},
			{"run_id", reqTopic.RunID, rt.Run},
		} {
			if f.got != nil && *f.got != f.recorded {
				return refuse("%s %s: request_event.topic.%s %q is not the one request %s was asked with",
					name, evID, f.name, *f.got, reqID)
			}
		}
	}
	cur, created, err := e.store.SetMarker(ctx, run, answeredPrefix+reqID, evID)
	if err != nil {
		return fmt.Errorf("dispatch: close question %s: %w", reqID, err)
	}
	if !created && cur != evID {
		return refuse("%s %s answers request %s of run %s, which event %s answered already", name, evID, reqID, t.Run, cur)
	}
	if created {
		e.dropDeadline(ctx, rt.Deadline)
		if r := e.cache.peek(run); r != nil && rt.Deadline != "" {
			r.dropDeadline(rt.Deadline)
		}
	}
	return nil
}

// answerOf returns the id of the request ev answers (request_event.event_id
// or request_event_id) and the request's reply topic as the answer carries
// it, if any.
func answerOf(ev event.Event) (string, *event.Topic) {
	v := reflect.ValueOf(ev)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return "", nil
	}
	v = v.Elem()
	if f := v.FieldByName("RequestEventID"); f.IsValid() && f.Kind() == reflect.String {
		return f.String(), nil
	}
	f := v.FieldByName("RequestEvent")
	if !f.IsValid() || (f.Kind() == reflect.Pointer || f.Kind() == reflect.Interface) && f.IsNil() || !f.CanInterface() {
		return "", nil
	}
	req, ok := f.Interface().(event.Event)
	if !ok {
		return "", nil
	}
	if rv := reflect.ValueOf(req); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return "", nil
	}
	return req.EventBase().EventID, topicField(req)
}

// topicField returns the Topic field of a HITL or BITL request, nil if it
// has none.
func topicField(ev event.Event) *event.Topic {
	v := reflect.ValueOf(ev)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("Topic")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*event.Topic]() {
		return nil
	}
	tp, _ := f.Interface().(*event.Topic)
	return tp
}

package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// Errors of Submit and Start; Handler maps them to HTTP statuses.
var (
	// ErrForbidden: the submitter is not among those the request names.
	ErrForbidden = errors.New("process: not allowed to submit this work")
	// ErrNoRequest: the walkthrough has no such work request.
	ErrNoRequest = errors.New("process: no such work request")
	// ErrAnswered: the request has its answer already.
	ErrAnswered = errors.New("process: the work request was answered already")
	// ErrBadWork: the work does not answer the request (kind, form or type).
	ErrBadWork = errors.New("process: the work does not answer the request")
	// ErrUnknownClass: the Submitter serves no such process class.
	ErrUnknownClass = errors.New("process: unknown process class")
	// ErrDuplicateID: the stream holds another event under the event id
	// given to Start, so the start was not stored.
	ErrDuplicateID = errors.New("process: event id taken")
)

// Submitter lets humans and programs start walkthroughs and submit the
// work that open requests ask for. Who may submit is checked: a human's
// work against the request's user_ids, user_emails and user_roles, a
// program's against its route's Who.
type Submitter struct {
	bus   bus.Bus
	store store.Store
	procs map[string]*classInfo
}

// classInfo is what a Submitter knows of a process class: from its
// declaration, or from its discovery answer.
type classInfo struct {
	class  string
	starts []string // start event names
	inputs []string // human and program work names the steps take
}

func infoOf(c *compiled) *classInfo {
	ci := &classInfo{class: c.class, starts: c.wf.StartEvents()}
	for _, st := range c.wf.Steps() {
		for _, n := range st.Triggers() {
			if isA(n, "HumanWorkEvent") || isA(n, "ProgramWorkEvent") {
				ci.inputs = append(ci.inputs, n)
			}
		}
	}
	return ci
}

// NewSubmitter serves the given processes over b, with the store their
// runners use (it records which submission answered a request).
func NewSubmitter(b bus.Bus, s store.Store, ps ...*Process) (*Submitter, error) {
	if b == nil || s == nil {
		return nil, errors.New("process: NewSubmitter needs a bus and a store")
	}
	sub := &Submitter{bus: b, store: s, procs: map[string]*classInfo{}}
	for _, p := range ps {
		c, err := p.compile()
		if err != nil {
			return nil, err
		}
		sub.procs[c.class] = infoOf(c)
	}
	return sub, nil
}

// NewSubmitterFromDiscovery serves the process classes of discovery
// answers, as a gateway that knows no process code does: the work each
// class takes comes from its human_inputs and program_inputs, its start
// events from the answer's start_events member (an addition of this SDK),
// and who may answer from each request itself.
func NewSubmitterFromDiscovery(b bus.Bus, s store.Store, answers ...*event.ProcessClassDiscoveryResponseEvent) (*Submitter, error) {
	if b == nil || s == nil {
		return nil, errors.New("process: NewSubmitterFromDiscovery needs a bus and a store")
	}
	sub := &Submitter{bus: b, store: s, procs: map[string]*classInfo{}}
	for _, a := range answers {
		if a == nil {
			continue
		}
		if err := topic.ValidateToken("process_class", a.ProcessClass); err != nil {
			return nil, err
		}
		ci := &classInfo{class: a.ProcessClass}
		for _, in := range a.HumanInputs {
			ci.inputs = append(ci.inputs, in.EventSpecs.EventName)
		}
		for _, in := range a.ProgramInputs {
			ci.inputs = append(ci.inputs, in.EventSpecs.EventName)
		}
		if raw, ok := event.Extra(a, "start_events"); ok {
			var specs []event.EventSpecs
			if err := json.Unmarshal(raw, &specs); err != nil {
				return nil, fmt.Errorf("process: discovery of %s: start_events: %w", a.ProcessClass, err)
			}
			for _, sp := range specs {
				ci.starts = append(ci.starts, sp.EventName)
			}
		}
		sub.procs[ci.class] = ci
	}
	return sub, nil
}

// Classes lists the process classes served, sorted.
func (s *Submitter) Classes() []string {
	out := make([]string, 0, len(s.procs))
	for c := range s.procs {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Start opens a new walkthrough of process instance class/id with start (a
// ProcessStartEvent subclass one of the process's steps takes) and returns
// its walkthrough id. by, if not nil, becomes the start's user, whatever
// start says. An event id the caller set is kept (the walkthrough id is
// derived from it); Handler never lets an HTTP client choose one.
func (s *Submitter) Start(ctx context.Context, class, id string, start event.Event, by *event.UserIdentity) (string, error) {
	c, ok := s.procs[class]
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrUnknownClass, class)
	}
	if start == nil || !event.IsProcessStart(start) || !slices.Contains(c.starts, event.Name(start)) {
		return "", fmt.Errorf("%w: %s does not start %s (it starts with %s)", ErrBadWork, nameOrNil(start), class,
			strings.Join(c.starts, ", "))
	}
	if err := topic.ValidateToken("process_id", id); err != nil {
		return "", err
	}
	b := start.EventBase()
	if b.EventID == "" {
		b.EventID = event.NewID()
	}
	walk := derivedID("walkthrough", class, id, b.EventID)
	if by != nil {
		var err error
		if start, err = withUser(start, by); err != nil {
			return "", err
		}
	}
	if err := s.publish(ctx, c.class, id, walk, start); err != nil {
		return "", err
	}
	return walk, nil
}

// withUser returns e with its user member set to by, declared field or
// not: the identity comes from authentication, never from the event.
func withUser(e event.Event, by *event.UserIdentity) (event.Event, error) {
	data, err := event.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadWork, err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadWork, err)
	}
	if members["user"], err = event.MarshalValue(by); err != nil {
		return nil, fmt.Errorf("process: encode user: %w", err)
	}
	if data, err = json.Marshal(members); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadWork, err)
	}
	out, err := event.Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadWork, err)
	}
	return out, nil
}

func nameOrNil(e event.Event) string {
	if e == nil {
		return "nil"
	}
	return event.Name(e)
}

// Submit publishes work (a HumanWorkEvent or ProgramWorkEvent subclass
// whose in_response_to names the request) into walkthrough walk of
// class/id, stamped with by as submitted_by. Only the first submission for
// a request is accepted; submitting the same event again is harmless. The
// event id is derived from the submission; one work carries is replaced.
// A nil error means the work is stored in the stream.
func (s *Submitter) Submit(ctx context.Context, class, id, walk string, work event.Event, by *event.UserIdentity) error {
	c, ok := s.procs[class]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownClass, class)
	}
	if work == nil || !(event.IsHumanWork(work) || event.IsProgramWork(work)) {
		return fmt.Errorf("%w: %s is neither a HumanWorkEvent nor a ProgramWorkEvent", ErrBadWork, nameOrNil(work))
	}
	we := embedded[event.WorkEvent](work)
	if we == nil || we.InResponseTo == nil || *we.InResponseTo == "" {
		return fmt.Errorf("%w: in_response_to names no work request", ErrBadWork)
	}
	reqID := *we.InResponseTo
	req, err := s.request(ctx, class, id, walk, reqID)
	if err != nil {
		return err
	}
	if !slices.Contains(c.inputs, event.Name(work)) {
		return fmt.Errorf("%w: no step of %s takes %s", ErrBadWork, class, event.Name(work))
	}
	who, err := whoOf(req)
	if err != nil {
		return err
	}
	switch {
	case event.IsHumanWork(work):
		h := embedded[event.HumanWorkRequestEvent](req)
		if h == nil {
			return fmt.Errorf("%w: request %s asks no human", ErrBadWork, reqID)
		}
		if len(h.Forms) > 0 && !slices.ContainsFunc(h.Forms, func(f event.Event) bool { return f != nil && event.Name(f) == event.Name(work) }) {
			return fmt.Errorf("%w: request %s asks for forms %s, not %s", ErrBadWork, reqID, formNames(h.Forms), event.Name(work))
		}
	case !event.IsProgramWork(req) && embedded[event.ProgramWorkRequestEvent](req) == nil:
		return fmt.Errorf("%w: request %s asks no program", ErrBadWork, reqID)
	}
	if !who.Allows(by) {
		return fmt.Errorf("%w: %s may not answer request %s", ErrForbidden, userName(by), reqID)
	}
	setSubmitter(work, by)
	// The id is always derived from the submission, never the
	// submitter's: a chosen id the stream saw recently would be dropped as
	// a duplicate while the request counted as answered, wedging the
	// walkthrough. Derived, a submitter who retries the same answer after
	// a failure is not refused as a second one, while a different answer
	// is.
	b := work.EventBase()
	created := b.CreatedAt
	b.EventID, b.CreatedAt = "", 0
	data, err := event.Marshal(work)
	b.CreatedAt = created
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadWork, err)
	}
	b.EventID = derivedID("submission", class, walk, reqID, by.ID, string(data))
	cur, _, err := s.store.SetMarker(ctx, runKey(class, walk), "work."+reqID, b.EventID)
	if err != nil {
		return err
	}
	if cur != b.EventID {
		return fmt.Errorf("%w: request %s by event %s", ErrAnswered, reqID, cur)
	}
	return s.publish(ctx, class, id, walk, work)
}

// whoOf reads who may answer a request from the request itself: the
// user_ids, user_emails and user_roles of a human request, and the same
// members the runner adds to a program request.
func whoOf(req event.Event) (Who, error) {
	if h := embedded[event.HumanWorkRequestEvent](req); h != nil {
		return Who{IDs: h.UserIDs, Emails: h.UserEmails, Roles: h.UserRoles}, nil
	}
	var w Who
	for key, dst := range map[string]*[]string{"user_ids": &w.IDs, "user_emails": &w.Emails, "user_roles": &w.Roles} {
		if raw, ok := event.Extra(req, key); ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return Who{}, fmt.Errorf("%w: %s of request %s: %v", ErrBadWork, key, req.EventBase().EventID, err)
			}
		}
	}
	return w, nil
}

func formNames(fs []event.Event) string {
	var n []string
	for _, f := range fs {
		if f != nil {
			n = append(n, event.Name(f))
		}
	}
	return strings.Join(n, ", ")
}

func userName(u *event.UserIdentity) string {
	if u == nil {
		return "an anonymous caller"
	}
	return fmt.Sprintf("user %q", u.ID)
}

func setSubmitter(work event.Event, by *event.UserIdentity) {
	if h := embedded[event.HumanWorkEvent](work); h != nil {
		h.SubmittedBy = by
	}
	if p := embedded[event.ProgramWorkEvent](work); p != nil {
		p.SubmittedBy = by
	}
}

// request reads work request reqID of the walkthrough back from the stream.
func (s *Submitter) request(ctx context.Context, class, id, walk, reqID string) (event.Event, error) {
	if err := topic.ValidateToken("event_id", reqID); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoRequest, err)
	}
	filter, err := topic.ProcessPattern{Class: class, ID: id, Walkthrough: walk, Type: topic.WorkRequest, EventID: reqID}.Subject()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoRequest, err)
	}
	// A request seen on a core subscription may not be stored yet: the
	// server delivers to subscribers while the stream ingests. So a miss is
	// looked up again for about a second before it counts.
	wait := 25 * time.Millisecond
	for {
		m, err := s.bus.NextMsg(ctx, topic.ProcessStreamName(class), filter, 1)
		if err == nil {
			return event.Unmarshal(m.Data)
		}
		if !errors.Is(err, bus.ErrNotFound) {
			return nil, err
		}
		if wait > time.Second {
			return nil, fmt.Errorf("%w: %s in walkthrough %s", ErrNoRequest, reqID, walk)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait *= 2
	}
}

func (s *Submitter) publish(ctx context.Context, class, id, walk string, e event.Event) error {
	b := e.EventBase()
	if b.CreatedAt == 0 {
		b.CreatedAt = time.Now().UnixNano()
	}
	subj, err := topic.Process{Class: class, ID: id, Walkthrough: walk, Type: topic.Work, Name: event.Name(e), EventID: b.EventID}.Subject()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadWork, err)
	}
	data, err := event.Marshal(e)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadWork, err)
	}
	ack, err := s.bus.PublishStream(ctx, &bus.Msg{Subject: subj, Data: data, Header: bus.InjectTrace(ctx, nil)}, b.EventID)
	if err != nil {
		return err
	}
	if ack.Duplicate {
		// Dropped for a known message id: stored if this event was sent
		// before (a retry), lost if another event holds the id.
		stored, err := s.bus.HasSubject(ctx, topic.ProcessStreamName(class), subj)
		if err != nil {
			return fmt.Errorf("process: check duplicate %s: %w", b.EventID, err)
		}
		if !stored {
			return fmt.Errorf("%w: event id %s belongs to another event of the stream; nothing was stored", ErrDuplicateID, b.EventID)
		}
	}
	return nil
}

// Identify tells who sends an HTTP request; an error answers 401.
type Identify func(*http.Request) (*event.UserIdentity, error)

// Handler serves the submission routes of the Submitter's processes:
//
//	POST /processes/{class}/{process_id}/walkthroughs
//	     body: a start event; answers 202 {"walkthrough_id", "event_id"}
//	POST /processes/{class}/{process_id}/walkthroughs/{walkthrough_id}/work
//	     body: a HumanWorkEvent or ProgramWorkEvent with in_response_to;
//	     answers 202, 403 when the caller may not submit it, 404 for an
//	     unknown request, 409 when it was answered already
//
// Bodies are events in the wire format (with _event_name).
func (s *Submitter) Handler(identify Identify) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /processes/{class}/{id}/walkthroughs", func(w http.ResponseWriter, r *http.Request) {
		by, ev, ok := s.read(w, r, identify)
		if !ok {
			return
		}
		// The walkthrough id is derived from the event id: one the client
		// chose could name another user's walkthrough.
		ev.EventBase().EventID = ""
		walk, err := s.Start(r.Context(), r.PathValue("class"), r.PathValue("id"), ev, by)
		if err != nil {
			httpError(w, err)
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]string{"walkthrough_id": walk, "event_id": ev.EventBase().EventID})
	})
	mux.HandleFunc("POST /processes/{class}/{id}/walkthroughs/{walk}/work", func(w http.ResponseWriter, r *http.Request) {
		by, ev, ok := s.read(w, r, identify)
		if !ok {
			return
		}
		if err := s.Submit(r.Context(), r.PathValue("class"), r.PathValue("id"), r.PathValue("walk"), ev, by); err != nil {
			httpError(w, err)
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]string{"event_id": ev.EventBase().EventID})
	})
	return mux
}

func (s *Submitter) read(w http.ResponseWriter, r *http.Request, identify Identify) (*event.UserIdentity, event.Event, bool) {
	if identify == nil {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"detail": "no identity"})
		return nil, nil, false
	}
	by, err := identify(r)
	if err != nil || by == nil {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"detail": "not authenticated"})
		return nil, nil, false
	}
	if _, ok := s.procs[r.PathValue("class")]; !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "unknown process class " + r.PathValue("class")})
		return nil, nil, false
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"detail": err.Error()})
		return nil, nil, false
	}
	ev, err := event.Unmarshal(data)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"detail": "body is not an event: " + err.Error()})
		return nil, nil, false
	}
	return by, ev, true
}

func httpError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrForbidden):
		status = http.StatusForbidden
	case errors.Is(err, ErrNoRequest), errors.Is(err, ErrUnknownClass):
		status = http.StatusNotFound
	case errors.Is(err, ErrAnswered), errors.Is(err, ErrDuplicateID):
		status = http.StatusConflict
	case errors.Is(err, ErrBadWork), errors.As(err, new(*topic.TokenError)):
		status = http.StatusBadRequest
	}
	writeJSON(w, status, map[string]string{"detail": err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

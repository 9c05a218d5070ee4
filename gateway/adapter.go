package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// This file is the surface protocol adapters (gateway/agui, gateway/mcp,
// the WebSocket stream) build on: they authenticate through the gateway,
// start runs and answer questions with the same thread and question checks
// as the REST endpoints, and follow a run's display events.

// ErrTimeout is returned by Stream.Follow when no terminal event arrived
// within Config.Timeout.
var ErrTimeout = errTimeout

// ErrorStatus returns the HTTP status an error of the gateway stands for:
// 400, 403, 404, 409, 413, 429 or 503 for a refused request, 401 for
// ErrUnauthenticated, 504 for ErrTimeout, else 500. Adapters use it to map
// refusals onto their own protocol's errors.
func ErrorStatus(err error) int {
	var re *requestError
	switch {
	case err == nil:
		return http.StatusOK
	case errors.As(err, &re):
		return re.status
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, errTimeout):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// Authenticate returns the user r is authenticated as by the gateway's
// Authenticator. The error wraps ErrUnauthenticated when r carries no
// acceptable credentials; a failure counts against the client address's
// budget (Config.AuthFailureRate), and once that is spent the error has
// ErrorStatus 429 and the Authenticator is not asked.
func (g *Gateway) Authenticate(r *http.Request) (*event.UserIdentity, error) {
	if u, ok := UserFrom(r.Context()); ok {
		return u, nil
	}
	addr := clientAddr(r)
	if ok, wait := g.limits.authAllowed(addr, g.now()); !ok {
		return nil, authThrottled(wait)
	}
	u, err := g.auth.Authenticate(r)
	if err == nil && (u == nil || u.ID == "") {
		err = fmt.Errorf("%w: authenticator returned no user", ErrUnauthenticated)
	}
	if errors.Is(err, ErrUnauthenticated) {
		g.limits.authFailed(addr, g.now())
	}
	if err == nil {
		markAuthenticated(r.Context())
	}
	return u, err
}

// UserFrom returns the user a request guarded by Guard was authenticated
// as.
func UserFrom(ctx context.Context) (*event.UserIdentity, bool) {
	u, ok := ctx.Value(userKey{}).(*event.UserIdentity)
	return u, ok && u != nil
}

// Guard wraps an adapter's handler as the gateway guards its own run
// endpoints: authentication (401), the per-user rate limit and cap on open
// requests (429), X-AIHub-* header filtering, the body limits (the body is
// read before the handler runs: 413 over MaxBody, 503 beyond
// MaxInFlightBody), and a write deadline that lets the response outlive
// the server's WriteTimeout. refuse writes a refusal in the adapter's
// protocol; nil writes the gateway's JSON error. The handler finds the
// user with UserFrom.
func (g *Gateway) Guard(h http.Handler, refuse func(w http.ResponseWriter, status int, msg string)) http.Handler {
	if refuse == nil {
		refuse = func(w http.ResponseWriter, status int, msg string) { writeError(w, status, msg, "") }
	}
	fail := func(w http.ResponseWriter, err error) {
		var re *requestError
		if errors.As(err, &re) && re.retryAfter > 0 {
			retryAfter(w, re.retryAfter)
		}
		refuse(w, ErrorStatus(err), err.Error())
	}
	return g.guardWith(g.limitBody(h, fail).ServeHTTP, refuse, fail)
}

// Mount serves h at pattern (an http.ServeMux pattern) on the gateway, next
// to its own routes. Adapters mount their endpoints with it; h is not
// guarded: wrap it with Guard.
func (g *Gateway) Mount(pattern string, h http.Handler) { g.mux.Handle(pattern, h) }

// Config returns the gateway's configuration with its defaults filled in.
func (g *Gateway) Config() Config { return g.cfg }

// RunRequest asks the gateway to start a run, as its agent endpoints do.
type RunRequest struct {
	// User is who starts the run; required.
	User *event.UserIdentity
	// Class and AgentID address the agent.
	Class, AgentID string
	// Event names the start event; empty picks the class's chat start
	// event, else its only start event.
	Event string
	// Body is the start event without its framework fields.
	Body map[string]json.RawMessage
	// Thread and Display (24 lower-case hex characters) continue a
	// conversation; empty ones are new. A new thread gets User as member;
	// an existing one must have User as member.
	Thread, Display string
	// Locale goes into the start event; empty uses Config.Locale.
	Locale string
	// Header is sent with the event (X-AIHub-* headers; the gateway sets
	// the user's).
	Header bus.Header
	// ReconstructHistory puts the thread's history (Config.History)
	// before the messages of Body, for clients that send only their
	// newest message. An empty messages list gets the history anyway.
	ReconstructHistory bool
}

// StartSpec returns the start event a RunRequest for class with event
// name would send: the named one, else the class's chat start event, else
// its only start event.
func (c *Class) StartSpec(name string) (event.EventSpecs, bool) {
	if name != "" {
		return c.startEvent(name)
	}
	if s, ok := c.chatStart(); ok {
		return s, true
	}
	if len(c.Response.StartEvents) == 1 {
		return c.Response.StartEvents[0], true
	}
	return event.EventSpecs{}, false
}

// Start starts a run and returns the stream of its thread and display,
// subscribed before the start event is published. Refusals are errors
// whose ErrorStatus is 400, 403 (not a member of the thread) or 404
// (unknown class or event). Close the stream when done.
func (g *Gateway) Start(ctx context.Context, req RunRequest) (*Stream, error) {
	if req.User == nil || req.User.ID == "" {
		return nil, &requestError{status: http.StatusUnauthorized, msg: "gateway: a run needs a user"}
	}
	class, ok := g.reg.get(req.Class)
	if !ok {
		return nil, &requestError{status: http.StatusNotFound, field: "agent_class", msg: g.unknownClass(req.Class)}
	}
	if err := validToken("agent_id", req.AgentID); err != nil {
		return nil, badRequest("agent_id", "%v", err)
	}
	spec, ok := class.StartSpec(req.Event)
	if !ok {
		return nil, &requestError{status: http.StatusNotFound, field: "event",
			msg: fmt.Sprintf("agent class %s takes no start event %q", req.Class, req.Event)}
	}
	for _, f := range []struct{ name, v string }{{"thread_id", req.Thread}, {"display_id", req.Display}} {
		if f.v != "" && !event.IsObjectID(f.v) {
			return nil, badRequest(f.name, "%s: must be 24 lower-case hex characters, got %q", f.name, f.v)
		}
	}
	body := req.Body
	if body == nil {
		body = map[string]json.RawMessage{}
	}
	locale := req.Locale
	if locale == "" {
		locale = g.cfg.Locale
	}
	sent := said(body)
	e, err := g.buildEvent(spec, body, req.User, locale)
	if err != nil {
		return nil, err
	}
	thread, display := req.Thread, req.Display
	if thread == "" {
		thread = event.NewID()
	}
	if display == "" {
		display = event.NewID()
	}
	if err := g.enterThread(ctx, thread, req.User); err != nil {
		return nil, err
	}
	if filled, err := g.fillMessages(ctx, thread, spec, body, req.ReconstructHistory); err != nil {
		return nil, err
	} else if filled {
		if e, err = g.buildEvent(spec, body, req.User, locale); err != nil {
			return nil, err
		}
	}
	run := event.NewID()
	d := &delivery{spec: spec, event: e, user: req.User, header: g.adapterHeader(req.Header, req.User), watch: display, said: sent,
		target:  agentTopic(class.Name(), req.AgentID, thread, display, run, spec.EventName),
		primary: primary{class: class.Name(), id: req.AgentID, run: run}}
	return g.open(ctx, d)
}

// AnswerRequest answers a HITL question the gateway has seen an agent ask.
type AnswerRequest struct {
	// User answers; they must be a member of Thread.
	User *event.UserIdentity
	// Thread is the question's thread; Question the request's event_id.
	Thread, Question string
	// Response is the answer's response value (a JSON string or boolean,
	// as the question's response event expects).
	Response json.RawMessage
	// Display is where the stream watches; empty: the question's display.
	Display string
	// Header is sent with the answer.
	Header bus.Header
}

// Answer publishes the answer to an open question and returns the stream
// of the asking run, subscribed before the answer is published. The checks
// are those of the HITL response endpoints: 403 when the user is not a
// member of the thread, the same 404 for an unknown question and one of
// another thread, 409 for a question that is answered, timed out or of an
// ended run.
func (g *Gateway) Answer(ctx context.Context, req AnswerRequest) (*Stream, error) {
	if req.User == nil || req.User.ID == "" {
		return nil, &requestError{status: http.StatusUnauthorized, msg: "gateway: an answer needs a user"}
	}
	if !event.IsObjectID(req.Thread) {
		if err := validToken("thread_id", req.Thread); err != nil {
			return nil, badRequest("thread_id", "thread_id: %v", err)
		}
	}
	if err := g.checkMember(ctx, req.Thread, req.User); err != nil {
		return nil, err
	}
	q, err := g.question(ctx, req.Thread, claimedRequest{EventID: req.Question})
	if err != nil {
		return nil, err
	}
	spec := event.EventSpecs{EventName: q.Response, EventParents: []string{q.Response}}
	if c, ok := g.reg.get(q.Class); ok {
		if s, ok := c.hitlResponse(q.Response); ok {
			spec = s
		}
	}
	if len(spec.EventParents) <= 1 {
		if t, ok := event.Lookup(q.Response); ok {
			spec.EventParents = t.Parents
		}
	}
	e, err := g.buildEvent(spec, map[string]json.RawMessage{"request_event": q.Request, "response": req.Response}, nil, "")
	if err != nil {
		return nil, err
	}
	display := req.Display
	if display == "" {
		display = q.Display
	}
	d := &delivery{spec: spec, event: e, user: req.User, header: g.adapterHeader(req.Header, req.User), watch: display,
		target:   agentTopic(q.Class, q.AgentID, req.Thread, q.Display, q.Run, spec.EventName),
		primary:  primary{class: q.Class, id: q.AgentID, run: q.Run},
		question: q.EventID}
	return g.open(ctx, d)
}

// adapterHeader keeps the forwarded X-AIHub-* headers of h and sets the
// user's identity header, as the guard does for the REST endpoints.
func (g *Gateway) adapterHeader(h bus.Header, user *event.UserIdentity) bus.Header {
	out := bus.Header{}
	for k, vs := range h {
		if g.forward[k] {
			out[k] = vs
		}
	}
	out[userHeaderKey] = []string{user.ID}
	return out
}

// userHeaderKey is userHeader as aihubHeaders keys it.
const userHeaderKey = "x-aihub-user-id"

func (g *Gateway) open(ctx context.Context, d *delivery) (*Stream, error) {
	wt, err := g.watchThread(ctx, d.target.Thread, d.watch)
	if err != nil {
		return nil, err
	}
	if err := g.publish(ctx, d); err != nil {
		wt.close()
		return nil, err
	}
	return &Stream{g: g, wt: wt, p: d.primary, thread: d.target.Thread, display: d.watch}, nil
}

// Stream follows the display events of a run's thread and display.
type Stream struct {
	g       *Gateway
	wt      *watch
	p       primary
	thread  string
	display string
}

// Thread returns the run's thread id.
func (s *Stream) Thread() string { return s.thread }

// Display returns the display id the stream watches.
func (s *Stream) Display() string { return s.display }

// Run returns the run's id.
func (s *Stream) Run() string { return s.p.run }

// Class returns the agent class of the run.
func (s *Stream) Class() string { return s.p.class }

// AgentID returns the agent id of the run.
func (s *Stream) AgentID() string { return s.p.id }

// Close ends the subscription.
func (s *Stream) Close() { s.wt.close() }

// StreamEvent is one display event of the followed thread.
type StreamEvent struct {
	// Topic is where the event was published.
	Topic topic.Agent
	// Event is the decoded event; Raw its JSON, on one line.
	Event event.Event
	Raw   []byte
	// Terminal marks the event that ends the wait: a stop of the run, an
	// exception or a HITL request.
	Terminal bool
}

// Follow calls onEvent with each display event, in arrival order, until
// the terminal one (which it also gets and returns), Config.Timeout
// (ErrTimeout), ctx's end or an error of onEvent. tick, if not nil, is
// called every Config.KeepAlive while waiting. The questions the events
// ask and the runs they end are recorded before onEvent sees them.
func (s *Stream) Follow(ctx context.Context, onEvent func(StreamEvent) error, tick func() error) (StreamEvent, error) {
	final, err := s.g.follow(ctx, s.wt, s.p, func(x *seen) error {
		return onEvent(StreamEvent{Topic: x.topic, Event: x.event, Raw: x.raw, Terminal: x.terminal})
	}, tick)
	if err != nil {
		return StreamEvent{}, err
	}
	return StreamEvent{Topic: final.topic, Event: final.event, Raw: final.raw, Terminal: true}, nil
}

// KeepAliveInterval is Config.KeepAlive.
func (g *Gateway) KeepAliveInterval() time.Duration { return g.cfg.KeepAlive }

// IsMember reports whether user belongs to thread.
func (g *Gateway) IsMember(ctx context.Context, thread string, user *event.UserIdentity) (bool, error) {
	return g.threads.IsMember(ctx, thread, user.ID)
}

// Subscribe subscribes to subject pattern on the gateway's bus, for
// adapters that stream more than one run (the WebSocket stream).
func (g *Gateway) Subscribe(ctx context.Context, pattern string, h func(*bus.Msg)) (bus.Subscription, error) {
	return g.bus.Subscribe(ctx, pattern, "", h)
}

func (e StreamEvent) seen() *seen {
	return &seen{topic: e.Topic, event: e.Event, raw: e.Raw, terminal: e.Terminal}
}

// Text is the full answer a stop event carries (the text of its last
// output message, else its content), as the OpenAI endpoint reads it.
func (e StreamEvent) Text() string { return finalText(e.seen()) }

// Exception returns the message and HTTP status of an ExceptionEvent of
// any subtype.
func (e StreamEvent) Exception() (msg string, status int) { return exceptionOf(e.seen()) }

// Unstreamed returns the part of final that streamed (the chunks' text so
// far) does not already hold, the backstop for chunks that lost the race
// with the stop.
func Unstreamed(streamed, final string) string { return unstreamed(streamed, final) }

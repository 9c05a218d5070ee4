package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// frameworkFields are filled by the gateway; a client cannot set them.
var frameworkFields = []string{
	"event_id", "created_at", "user", "locale", "display_name", "display_description",
	"agent_config", "_event_name", "_parent_event_names", "_aihub_headers",
}

// requestError is a client mistake: it becomes a 4xx JSON answer.
type requestError struct {
	status int
	field  string
	msg    string
	// retryAfter, if set, is sent as Retry-After.
	retryAfter time.Duration
}

func (e *requestError) Error() string { return e.msg }

func badRequest(field, format string, args ...any) *requestError {
	return &requestError{status: http.StatusBadRequest, field: field, msg: fmt.Sprintf(format, args...)}
}

func (g *Gateway) fail(w http.ResponseWriter, err error) {
	var re *requestError
	if errors.As(err, &re) {
		if re.retryAfter > 0 {
			retryAfter(w, re.retryAfter)
		}
		writeError(w, re.status, re.msg, re.field)
		return
	}
	g.log.Error("gateway: request failed", "err", err)
	writeError(w, http.StatusInternalServerError, err.Error(), "")
}

// authenticate returns the caller or writes 401/500.
func (g *Gateway) authenticate(w http.ResponseWriter, r *http.Request) (*event.UserIdentity, bool) {
	return g.authenticateWith(w, r, g.fail)
}

// authenticateWith is authenticate with the error shape of fail.
func (g *Gateway) authenticateWith(w http.ResponseWriter, r *http.Request, fail func(http.ResponseWriter, error)) (*event.UserIdentity, bool) {
	u, err := g.Authenticate(r)
	if err != nil {
		var re *requestError
		if errors.As(err, &re) {
			if re.retryAfter > 0 {
				retryAfter(w, re.retryAfter)
			}
			fail(w, re)
		} else if errors.Is(err, ErrUnauthenticated) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="saap-gateway"`)
			fail(w, &requestError{status: http.StatusUnauthorized, msg: err.Error()})
		} else {
			fail(w, fmt.Errorf("gateway: authenticate: %w", err))
		}
		return nil, false
	}
	return u, true
}

// readObject reads a JSON object body, at most MaxBody bytes, within the
// global budget of bodies in flight.
func (g *Gateway) readObject(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, error) {
	data, err := g.readBody(w, r)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		return nil, badRequest("body", "body: must be a JSON object")
	}
	return obj, nil
}

// readBody reads the request body, at most MaxBody bytes (else 413),
// within the global budget of bodies in flight (else 503).
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	size := g.cfg.MaxBody
	if r.ContentLength >= 0 && r.ContentLength < size {
		size = r.ContentLength
	}
	release, ok := g.limits.reserveBody(size)
	if !ok {
		retryAfter(w, time.Second)
		return nil, &requestError{status: http.StatusServiceUnavailable, field: "body",
			msg: "body: the gateway is reading too many request bodies at once; retry shortly"}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBody))
	release()
	if err == nil {
		// The body is in: the server's ReadTimeout must not end the
		// request's context while it waits for the agent.
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &requestError{status: http.StatusRequestEntityTooLarge, field: "body",
				msg: fmt.Sprintf("body: larger than %d bytes", mbe.Limit)}
		}
		return nil, badRequest("body", "body: %v", err)
	}
	return data, nil
}

// limitBody reads the body of a request to h as the gateway's own routes
// do (readBody) before h sees it, so that every route counts against
// MaxBody and MaxInFlightBody; fail writes the refusal.
func (g *Gateway) limitBody(h http.Handler, fail func(http.ResponseWriter, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		data, err := g.readBody(w, r)
		if err != nil {
			fail(w, err)
			return
		}
		_ = r.Body.Close()
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
		h.ServeHTTP(w, r)
	})
}

// readRequest reads the optional thread_id and display_id of the query and
// the body of an agent endpoint request.
func (g *Gateway) readRequest(w http.ResponseWriter, r *http.Request) (thread, display string, body map[string]json.RawMessage, err error) {
	if thread, err = queryID(r, "thread_id"); err != nil {
		return "", "", nil, err
	}
	if display, err = queryID(r, "display_id"); err != nil {
		return "", "", nil, err
	}
	body, err = g.readObject(w, r)
	return thread, display, body, err
}

// queryID reads an optional ObjectId-shaped query parameter.
func queryID(r *http.Request, name string) (string, error) {
	v := r.URL.Query().Get(name)
	if v != "" && !event.IsObjectID(v) {
		return "", badRequest(name, "%s: must be 24 lower-case hex characters, got %q", name, v)
	}
	return v, nil
}

// locale picks the first of de, en, fr, it in Accept-Language.
func (g *Gateway) locale(r *http.Request) string {
	for part := range strings.SplitSeq(r.Header.Get("Accept-Language"), ",") {
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		lang, _, _ := strings.Cut(strings.ToLower(tag), "-")
		switch lang {
		case "de", "en", "fr", "it":
			return lang
		}
	}
	return g.cfg.Locale
}

// aihubHeaders copies the request's X-AIHub-* headers; the guard has
// already dropped those not allowed and set the user's identity.
func aihubHeaders(r *http.Request) bus.Header {
	var h bus.Header
	for k, vs := range r.Header {
		if len(k) > 8 && strings.EqualFold(k[:8], "x-aihub-") && len(vs) > 0 {
			if h == nil {
				h = bus.Header{}
			}
			h[strings.ToLower(k)] = vs
		}
	}
	return h
}

// delivery is an event ready to be published into a run.
type delivery struct {
	spec    event.EventSpecs
	event   event.Event
	user    *event.UserIdentity
	target  topic.Agent // Type, Name set; EventID filled at publish
	primary primary
	header  bus.Header
	// watch is the display id whose events answer the request.
	watch string
	// question is the event id of the HITL request a response answers.
	question string
	// said is the last message the client sent (its JSON), nil for none:
	// once the event is published, the event's copy of it, in wire form,
	// goes into the thread's history.
	said json.RawMessage
}

// serveAgent serves the agent endpoints the gateway builds from discovery.
func (g *Gateway) serveAgent(w http.ResponseWriter, r *http.Request, stream bool) {
	user, ok := g.authenticate(w, r)
	if !ok {
		return
	}
	className, id, name := r.PathValue("class"), r.PathValue("id"), r.PathValue("event")
	class, ok := g.reg.get(className)
	if !ok {
		writeError(w, http.StatusNotFound, g.unknownClass(className), "agent_class")
		return
	}
	if err := validToken("agent_id", id); err != nil {
		g.fail(w, badRequest("agent_id", "%v", err))
		return
	}
	var d *delivery
	var err error
	if spec, ok := class.startEvent(name); ok {
		d, err = g.startDelivery(w, r, user, class, id, spec)
	} else if spec, ok := class.hitlResponse(name); ok {
		d, err = g.responseDelivery(w, r, user, spec)
	} else {
		writeError(w, http.StatusNotFound, fmt.Sprintf("agent class %s takes no event %q", className, name), "event")
		return
	}
	if err != nil {
		g.fail(w, err)
		return
	}
	g.answer(w, r, d, stream)
}

// startDelivery builds a start event as StartEvent.from_raw_data does
// and checks the caller's access to the thread.
func (g *Gateway) startDelivery(w http.ResponseWriter, r *http.Request, user *event.UserIdentity, class *Class, id string, spec event.EventSpecs) (*delivery, error) {
	thread, display, body, err := g.readRequest(w, r)
	if err != nil {
		return nil, err
	}
	if thread != "" && specHas(spec, "UserMessageEvent") {
		// The chat flow: in a thread with an open input or chat question,
		// the user's next message is the answer.
		if text, ok := lastMessageText(body); ok {
			d, err := g.chatAnswer(r, user, class, thread, display, text)
			if err != nil || d != nil {
				return d, err
			}
		}
	}
	reconstruct, err := truthy(r.URL.Query().Get("reconstruct_history"))
	if err != nil {
		return nil, badRequest("reconstruct_history", "reconstruct_history: %v", err)
	}
	sent := said(body)
	e, err := g.buildEvent(spec, body, user, g.locale(r))
	if err != nil {
		return nil, err
	}
	if thread == "" {
		thread = event.NewID()
	}
	if display == "" {
		display = event.NewID()
	}
	if err := g.checkFiles(r.Context(), body, user); err != nil {
		return nil, err
	}
	if err := g.enterThread(r.Context(), thread, user); err != nil {
		return nil, err
	}
	if filled, err := g.fillMessages(r.Context(), thread, spec, body, reconstruct); err != nil {
		return nil, err
	} else if filled {
		if e, err = g.buildEvent(spec, body, user, g.locale(r)); err != nil {
			return nil, err
		}
	}
	run := event.NewID()
	return &delivery{
		said:    sent,
		spec:    spec,
		event:   e,
		user:    user,
		target:  topic.Agent{Class: class.Name(), ID: id, Thread: thread, Display: display, Run: run, Type: topic.Control, Name: spec.EventName},
		primary: primary{class: class.Name(), id: id, run: run},
		header:  aihubHeaders(r),
		watch:   display,
	}, nil
}

// lastMessageText is the text of the last message of a start event's
// messages field, if it has one.
func lastMessageText(body map[string]json.RawMessage) (string, bool) {
	raw, ok := body["messages"]
	if !ok {
		return "", false
	}
	var msgs []event.ChatMessage
	if event.UnmarshalValue(raw, &msgs) != nil || len(msgs) == 0 {
		return "", false
	}
	return msgs[len(msgs)-1].Content(), true
}

// enterThread creates thread with user as its member, or checks that user
// is a member of the existing thread.
func (g *Gateway) enterThread(ctx context.Context, thread string, user *event.UserIdentity) error {
	created, err := g.threads.Create(ctx, thread, user.ID)
	if err != nil {
		return fmt.Errorf("gateway: threads: %w", err)
	}
	if created {
		return nil
	}
	return g.checkMember(ctx, thread, user)
}

func (g *Gateway) checkMember(ctx context.Context, thread string, user *event.UserIdentity) error {
	ok, err := g.threads.IsMember(ctx, thread, user.ID)
	if err != nil {
		return fmt.Errorf("gateway: threads: %w", err)
	}
	if !ok {
		return &requestError{status: http.StatusForbidden, field: "thread_id",
			msg: fmt.Sprintf("thread %s: user %s is not a member", thread, user.ID)}
	}
	return nil
}

// responseDelivery builds the answer to a HITL question. The question is
// the one the gateway recorded under the event id of the embedded
// request_event, in the thread of the query (or of the embedded topic); the
// caller must be a member of that thread. The answer is routed by the
// recorded topic and carries the recorded request, never the client's copy,
// so a client can neither answer into another run nor redirect an answer to
// another agent. As in the reference, the question may come from another
// agent of the thread than the URL's (a delegate asking).
func (g *Gateway) responseDelivery(w http.ResponseWriter, r *http.Request, user *event.UserIdentity, spec event.EventSpecs) (*delivery, error) {
	thread, display, body, err := g.readRequest(w, r)
	if err != nil {
		return nil, err
	}
	c, err := readClaim(body)
	if err != nil {
		return nil, err
	}
	if thread == "" {
		thread = c.thread()
	}
	if thread == "" {
		return nil, badRequest("thread_id", "thread_id: required in the query or in request_event.topic.thread_id")
	}
	if !event.IsObjectID(thread) {
		if err := validToken("thread_id", thread); err != nil {
			return nil, badRequest("thread_id", "thread_id: %v", err)
		}
	}
	if err := g.checkMember(r.Context(), thread, user); err != nil {
		return nil, err
	}
	q, err := g.question(r.Context(), thread, c)
	if err != nil {
		return nil, err
	}
	if q.Response != spec.EventName {
		return nil, badRequest("request_event.topic.event_name",
			"request_event.topic.event_name: the question expects %s, not %s", q.Response, spec.EventName)
	}
	body["request_event"] = q.Request
	e, err := g.buildEvent(spec, body, nil, "")
	if err != nil {
		return nil, err
	}
	if display == "" {
		display = q.Display
	}
	return &delivery{
		spec:     spec,
		event:    e,
		user:     user,
		target:   agentTopic(q.Class, q.AgentID, thread, q.Display, q.Run, spec.EventName),
		primary:  primary{class: q.Class, id: q.AgentID, run: q.Run},
		header:   aihubHeaders(r),
		watch:    display,
		question: q.EventID,
	}, nil
}

// topicOf checks and reads the topic of a HITL request.
func topicOf(req *event.HumanInTheLoopRequestEvent) (hitlTopic, error) {
	if req.Topic == nil {
		return hitlTopic{}, badRequest("request_event.topic", "request_event.topic: required")
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	tp := req.Topic
	t := hitlTopic{Class: str(tp.AgentClass), ID: str(tp.AgentID), Thread: str(tp.ThreadID),
		Display: str(tp.DisplayID), Run: str(tp.RunID), Name: str(tp.EventName)}
	for _, f := range []struct{ name, v string }{
		{"agent_class", t.Class}, {"agent_id", t.ID}, {"thread_id", t.Thread}, {"display_id", t.Display}, {"run_id", t.Run},
	} {
		if err := validToken(f.name, f.v); err != nil {
			return hitlTopic{}, badRequest("request_event.topic."+f.name, "request_event.topic.%s: %v", f.name, err)
		}
	}
	return t, nil
}

// hitlTopic is the part of a HITL request's topic the gateway routes by.
type hitlTopic struct {
	Class   string `json:"agent_class"`
	ID      string `json:"agent_id"`
	Thread  string `json:"thread_id"`
	Display string `json:"display_id"`
	Run     string `json:"run_id"`
	Name    string `json:"event_name"`
}

// buildEvent turns a request body into an event as the reference's
// from_raw_data does: the body's fields, typed by the spec's name and
// parents, decoded by the event codec; then a fresh id and time. user and
// locale are added for start events only.
func (g *Gateway) buildEvent(spec event.EventSpecs, body map[string]json.RawMessage, user *event.UserIdentity, locale string) (event.Event, error) {
	for _, f := range frameworkFields {
		delete(body, f)
	}
	if err := checkSchema(spec.EventSchema, body); err != nil {
		return nil, err
	}
	if user != nil {
		u, err := event.MarshalValue(user)
		if err != nil {
			return nil, fmt.Errorf("gateway: encode user: %w", err)
		}
		l, _ := json.Marshal(locale)
		body["user"], body["locale"] = u, l
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, badRequest("body", "body: %v", err)
	}
	parents := spec.EventParents
	if len(parents) == 0 {
		parents = []string{spec.EventName}
	}
	e, err := event.UnmarshalNamed(data, spec.EventName, parents)
	if err != nil {
		return nil, badRequest(fieldOf(err), "body: %v", err)
	}
	b := e.EventBase()
	b.EventID, b.CreatedAt = event.NewID(), g.now().UnixNano()
	if missing := event.Missing(e); len(missing) > 0 {
		return nil, badRequest(missing[0], "body: %s: required field missing", strings.Join(missing, ", "))
	}
	if err := event.Validate(e); err != nil {
		return nil, badRequest(fieldOf(err), "body: %v", err)
	}
	return e, nil
}

// fieldOf finds the field an event decode error names, if it says.
func fieldOf(err error) string {
	var de *event.DecodeError
	if errors.As(err, &de) && de.Field != "" {
		return de.Field
	}
	var ve *event.ValidationError
	if errors.As(err, &ve) && ve.Field != "" {
		return ve.Field
	}
	return "body"
}

// publish sends d: first the user echo of a display event on the UserAgent
// subject (core), then the event to the agent's control subject
// (JetStream), with a fresh id for a start and the echo's id for a HITL or
// BITL answer, as the reference's distributor does.
func (g *Gateway) publish(ctx context.Context, d *delivery) (err error) {
	claimed, err := g.claim(ctx, d)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			g.release(ctx, claimed)
		}
	}()
	b := d.event.EventBase()
	if event.IsDisplay(d.event) && d.user != nil {
		echo := topic.UserEcho(d.user.ID, d.target.Thread, d.target.Display, d.target.Run, d.target.Name, b.EventID)
		subj, err := echo.Subject()
		if err != nil {
			g.log.Warn("gateway: user id cannot be a subject token; no echo", "user", d.user.ID, "err", err)
		} else {
			data, err := event.Marshal(d.event)
			if err != nil {
				return fmt.Errorf("gateway: encode %s: %w", d.target.Name, err)
			}
			if err := g.bus.Publish(ctx, &bus.Msg{Subject: subj, Data: data}); err != nil {
				return fmt.Errorf("gateway: publish echo: %w", err)
			}
		}
	}
	if !event.IsHITLResponse(d.event) && !event.IsBITLResponse(d.event) {
		// A start's control copy gets its own id; an answer keeps the
		// echo's, as the reference's distributor publishes them.
		b.EventID = event.NewID()
	}
	t := d.target
	t.EventID = b.EventID
	subj, err := t.Subject()
	if err != nil {
		return badRequest("subject", "%v", err)
	}
	data, err := event.Marshal(d.event)
	if err != nil {
		return fmt.Errorf("gateway: encode %s: %w", d.target.Name, err)
	}
	ack, err := g.bus.PublishStream(ctx, &bus.Msg{Subject: subj, Header: d.header, Data: data}, b.EventID)
	if err != nil {
		return fmt.Errorf("gateway: publish %s: %w", subj, err)
	}
	if ack.Duplicate {
		// The id is fresh: a duplicate is another event's, and this one
		// was not stored.
		return fmt.Errorf("gateway: publish %s: the stream holds another event under id %s", subj, b.EventID)
	}
	g.recordSent(ctx, d)
	return nil
}

// answer publishes d and writes the response: SSE for /stream, else the
// terminal event as JSON.
func (g *Gateway) answer(w http.ResponseWriter, r *http.Request, d *delivery, stream bool) {
	ctx := r.Context()
	display := d.watch
	wt, err := g.watchThread(ctx, d.target.Thread, display)
	if err != nil {
		g.fail(w, err)
		return
	}
	defer wt.close()
	if err := g.publish(ctx, d); err != nil {
		g.fail(w, err)
		return
	}
	h := w.Header()
	h.Set("X-Thread-Id", d.target.Thread)
	h.Set("X-Display-Id", display)
	h.Set("X-Run-Id", d.target.Run)
	if stream {
		g.streamSSE(w, r, wt, d.primary)
		return
	}
	final, err := g.follow(ctx, wt, d.primary, func(*seen) error { return nil }, nil)
	switch {
	case errors.Is(err, errTimeout):
		writeError(w, http.StatusGatewayTimeout, fmt.Sprintf("no answer from %s/%s within %s", d.primary.class, d.primary.id, g.cfg.Timeout), "")
	case err != nil:
		// The client went away; nobody reads an answer.
	case event.IsException(final.event):
		msg, status := exceptionOf(final)
		writeError(w, status, msg, "")
	default:
		writeRaw(w, http.StatusOK, final.raw)
	}
}

// exceptionOf reads message and http_status_code of an ExceptionEvent of
// any subtype.
func exceptionOf(s *seen) (string, int) {
	x, ok := as[event.ExceptionEvent](s)
	if !ok {
		return "", http.StatusInternalServerError
	}
	status := http.StatusInternalServerError
	if n := x.HTTPStatusCode; n >= 400 && n <= 599 {
		status = n
	}
	return x.Message, status
}

func agentTopic(class, id, thread, display, run, name string) topic.Agent {
	return topic.Agent{Class: class, ID: id, Thread: thread, Display: display, Run: run, Type: topic.Control, Name: name}
}

// Package ws serves the platform UI's WebSocket stream of display events,
// as the reference gateway does:
//
//	GET /api/v1/{tenant}/events/ws
//	GET /events/ws
//
// The client's first message is {"token": "Bearer <token>"}; the gateway
// authenticates it with its Authenticator (as if it were the request's
// Authorization header) and then pushes one ContextualizedAgentEvent
//
//	{locale, event_display_name, event_display_description, agent_class,
//	 agent_id, thread_id, display_id, run_id, event_type, event_name,
//	 event_id, event}
//
// per display event of every thread the user is a member of (membership is
// cached for a minute). The stream is read-only: any later client message
// is answered with {"error": ...} and changes nothing. A bad or missing
// token closes the connection with status 1008 (policy violation); a
// client that cannot keep up is closed with 1013 (try again later) rather
// than slowing the gateway down. Browsers of other origins are refused
// unless the gateway's CORS configuration allows them.
package ws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/topic"
)

// Options configure the stream.
type Options struct {
	// AuthTimeout bounds the wait for the first message. Default 10 s.
	AuthTimeout time.Duration
	// MembershipTTL is how long a thread's membership answer is reused.
	// Default one minute, as the reference.
	MembershipTTL time.Duration
	// Buffer is how many events may wait for a slow client before it is
	// disconnected. Default 1024.
	Buffer int
}

func (o Options) withDefaults() Options {
	if o.AuthTimeout <= 0 {
		o.AuthTimeout = 10 * time.Second
	}
	if o.MembershipTTL <= 0 {
		o.MembershipTTL = time.Minute
	}
	if o.Buffer <= 0 {
		o.Buffer = 1024
	}
	return o
}

// readyHook, when set (by tests), is called once a connection streams.
var readyHook func(user string)

// Mount serves the stream on g.
func Mount(g *gateway.Gateway, o Options) {
	h := Handler(g, o)
	g.Mount("GET /events/ws", h)
	g.Mount("GET /api/v1/{tenant}/events/ws", h)
}

// Handler returns the WebSocket endpoint.
func Handler(g *gateway.Gateway, o Options) http.Handler {
	o = o.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept := &websocket.AcceptOptions{}
		if c := g.Config().CORS; c != nil {
			for _, origin := range c.AllowOrigins {
				if origin == "*" {
					accept.InsecureSkipVerify = true
				}
				accept.OriginPatterns = append(accept.OriginPatterns, strings.TrimPrefix(strings.TrimPrefix(origin, "https://"), "http://"))
			}
		}
		conn, err := websocket.Accept(w, r, accept)
		if err != nil {
			return // Accept wrote the refusal
		}
		// The stream outlives the server's write timeout.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		(&stream{g: g, o: o, conn: conn, r: r}).serve(r.Context())
	})
}

type stream struct {
	g    *gateway.Gateway
	o    Options
	conn *websocket.Conn
	r    *http.Request
	user *event.UserIdentity

	members map[string]membership
}

type membership struct {
	ok      bool
	expires time.Time
}

// authMessage is the client's first message.
type authMessage struct {
	Token string `json:"token"`
}

func (s *stream) serve(ctx context.Context) {
	defer s.conn.CloseNow()
	user, err := s.authenticate(ctx)
	if err != nil {
		_ = s.conn.Close(websocket.StatusPolicyViolation, clip(err.Error()))
		return
	}
	s.user = user
	s.members = map[string]membership{}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	queue := make(chan *bus.Msg, s.o.Buffer)
	var overflow sync.Once
	slow := make(chan struct{})
	pattern, err := topic.AgentPattern{Type: topic.Display}.Subject()
	if err != nil {
		_ = s.conn.Close(websocket.StatusInternalError, "subject pattern")
		return
	}
	sub, err := s.g.Subscribe(ctx, pattern, func(m *bus.Msg) {
		select {
		case queue <- m:
		default:
			overflow.Do(func() { close(slow) })
		}
	})
	if err != nil {
		_ = s.conn.Close(websocket.StatusInternalError, "cannot subscribe to display events")
		return
	}
	defer func() { _ = sub.Unsubscribe() }()

	// Inbound messages: the stream is read-only.
	go func() {
		defer cancel()
		for {
			if _, _, err := s.conn.Read(ctx); err != nil {
				return
			}
			_ = s.send(ctx, map[string]string{"error": "the event stream is read-only: inbound events are refused"})
		}
	}()
	if readyHook != nil {
		readyHook(user.ID)
	}
	for {
		select {
		case <-ctx.Done():
			_ = s.conn.Close(websocket.StatusNormalClosure, "")
			return
		case <-slow:
			_ = s.conn.Close(websocket.StatusTryAgainLater, "the client does not keep up with the events")
			return
		case m := <-queue:
			out, ok := s.contextualize(ctx, m)
			if !ok {
				continue
			}
			if err := s.send(ctx, out); err != nil {
				return
			}
		}
	}
}

func (s *stream) authenticate(ctx context.Context) (*event.UserIdentity, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.AuthTimeout)
	defer cancel()
	_, data, err := s.conn.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("no authentication message: %w", err)
	}
	var m authMessage
	if err := json.Unmarshal(data, &m); err != nil || m.Token == "" {
		return nil, errors.New(`the first message must be {"token": "Bearer <token>"}`)
	}
	r := s.r.Clone(s.r.Context())
	tok := m.Token
	if len(tok) < 7 || !strings.EqualFold(tok[:7], "bearer ") {
		tok = "Bearer " + tok
	}
	r.Header.Set("Authorization", tok)
	u, err := s.g.Authenticate(r)
	if err != nil {
		if errors.Is(err, gateway.ErrUnauthenticated) {
			return nil, errors.New("unauthenticated")
		}
		return nil, errors.New("authentication failed")
	}
	return u, nil
}

func (s *stream) send(ctx context.Context, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return s.conn.Write(ctx, websocket.MessageText, data)
}

// member reports, with a cache, whether the user belongs to thread.
func (s *stream) member(ctx context.Context, thread string) bool {
	now := time.Now()
	if m, ok := s.members[thread]; ok && now.Before(m.expires) {
		return m.ok
	}
	ok, err := s.g.IsMember(ctx, thread, s.user)
	if err != nil {
		return false // not cached: asked again with the next event
	}
	if len(s.members) > 4096 {
		clear(s.members)
	}
	s.members[thread] = membership{ok: ok, expires: now.Add(s.o.MembershipTTL)}
	return ok
}

// Event is what the stream pushes for each display event: the reference's
// ContextualizedAgentEvent.
type Event struct {
	Locale                  string          `json:"locale"`
	EventDisplayName        string          `json:"event_display_name"`
	EventDisplayDescription string          `json:"event_display_description"`
	AgentClass              string          `json:"agent_class"`
	AgentID                 string          `json:"agent_id"`
	ThreadID                string          `json:"thread_id"`
	DisplayID               string          `json:"display_id"`
	RunID                   string          `json:"run_id"`
	EventType               string          `json:"event_type"`
	EventName               string          `json:"event_name"`
	EventID                 string          `json:"event_id"`
	Event                   json.RawMessage `json:"event"`
}

func (s *stream) contextualize(ctx context.Context, m *bus.Msg) (*Event, bool) {
	t, err := topic.ParseAgent(m.Subject)
	if err != nil || !s.member(ctx, t.Thread) {
		return nil, false
	}
	e, err := event.Unmarshal(m.Data)
	if err != nil {
		return nil, false
	}
	locale := s.locale()
	name, desc := displayTexts(m.Data, e, locale)
	return &Event{Locale: locale, EventDisplayName: name, EventDisplayDescription: desc,
		AgentClass: t.Class, AgentID: t.ID, ThreadID: t.Thread, DisplayID: t.Display, RunID: t.Run,
		EventType: string(t.Type), EventName: t.Name, EventID: t.EventID, Event: json.RawMessage(m.Data)}, true
}

// locale is the first of de, en, fr, it in the upgrade request's
// Accept-Language, else the gateway's default.
func (s *stream) locale() string {
	for part := range strings.SplitSeq(s.r.Header.Get("Accept-Language"), ",") {
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		lang, _, _ := strings.Cut(strings.ToLower(tag), "-")
		switch lang {
		case "de", "en", "fr", "it":
			return lang
		}
	}
	return s.g.Config().Locale
}

// displayTexts are the event's display name and description in locale:
// its own display_name and display_description, else the defaults of its
// type or of its nearest known ancestor.
func displayTexts(raw []byte, e event.Event, locale string) (string, string) {
	var own struct {
		Name *event.LocaleString `json:"display_name"`
		Desc *event.LocaleString `json:"display_description"`
	}
	_ = event.UnmarshalValue(raw, &own)
	var name, desc string
	if own.Name != nil {
		name = own.Name.Get(locale)
	}
	if own.Desc != nil {
		desc = own.Desc.Get(locale)
	}
	if name != "" {
		return name, desc
	}
	var parents []string
	if t, ok := event.TypeOf(e); ok {
		parents = t.Parents
	} else {
		parents = append([]string{event.Name(e)}, event.Parents(e)...)
	}
	for _, p := range parents {
		if t, ok := event.Lookup(p); ok {
			if n, d, ok := t.DisplayDefaults(); ok {
				return n.Get(locale), d.Get(locale)
			}
		}
	}
	return name, desc
}

// clip keeps a close reason within the 123 bytes WebSocket allows.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}

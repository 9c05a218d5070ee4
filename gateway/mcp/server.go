package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
)

// Options configure the MCP server.
type Options struct {
	// AgentID is the agent id the tools address. Default "default"; the
	// route /mcp/{agent_id} names another.
	AgentID string
	// Name and Version describe the server to MCP clients. Default
	// "saap-gateway" and "1".
	Name, Version string
}

func (o Options) withDefaults() Options {
	if o.AgentID == "" {
		o.AgentID = "default"
	}
	if o.Name == "" {
		o.Name = "saap-gateway"
	}
	if o.Version == "" {
		o.Version = "1"
	}
	return o
}

// frameworkFields are filled by the gateway; tools do not ask for them.
var frameworkFields = []string{
	"event_id", "created_at", "user", "locale", "display_name", "display_description",
	"agent_config", "_event_name", "_parent_event_names", "_aihub_headers",
}

// NewServer returns an MCP server whose tools are the start events of the
// classes g serves now, each call made as user.
func NewServer(g *gateway.Gateway, user *event.UserIdentity, o Options) *sdk.Server {
	o = o.withDefaults()
	s := sdk.NewServer(&sdk.Implementation{Name: o.Name, Version: o.Version}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	for _, c := range g.Classes() {
		for _, spec := range c.Response.StartEvents {
			t := tool{g: g, user: user, class: c.Name(), agentID: o.AgentID, spec: spec}
			def, _ := c.StartSpec("")
			t.name = c.Name()
			if def.EventName != spec.EventName {
				t.name = c.Name() + "." + spec.EventName
			}
			t.chat = hasParent(spec, "UserMessageEvent")
			desc := ""
			if d := c.Response.Description; d != nil {
				desc = d.En
				if desc == "" {
					desc = d.De
				}
			}
			s.AddTool(&sdk.Tool{Name: t.name, Description: desc, InputSchema: t.schema()}, t.call)
		}
	}
	return s
}

func hasParent(s event.EventSpecs, name string) bool {
	return s.EventName == name || slices.Contains(s.EventParents, name)
}

// tool is one start event of a class, served as an MCP tool.
type tool struct {
	g       *gateway.Gateway
	user    *event.UserIdentity
	class   string
	agentID string
	spec    event.EventSpecs
	name    string
	// chat: the start event is a UserMessageEvent; the tool takes the
	// user's message as "message".
	chat bool
}

// schema is the start event's JSON Schema without the fields the gateway
// fills; a chat start event takes a "message" string instead of its
// message list.
func (t tool) schema() map[string]any {
	out := map[string]any{"type": "object"}
	props := map[string]json.RawMessage{}
	var required []string
	if raw, ok := t.spec.EventSchema["properties"]; ok {
		_ = json.Unmarshal(raw, &props)
	}
	if raw, ok := t.spec.EventSchema["required"]; ok {
		_ = json.Unmarshal(raw, &required)
	}
	if raw, ok := t.spec.EventSchema["$defs"]; ok {
		out["$defs"] = raw
	}
	drop := slices.Clone(frameworkFields)
	if t.chat {
		drop = append(drop, "messages", "files", "requested_features")
		props["message"] = json.RawMessage(`{"type":"string","description":"The user's message to the agent."}`)
		required = append(required, "message")
	}
	for _, f := range drop {
		delete(props, f)
	}
	required = slices.DeleteFunc(required, func(f string) bool { return slices.Contains(drop, f) })
	out["properties"] = props
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

// requestState is what an elicitation round carries back to the server:
// the question asked. The gateway checks it like any answer (the caller
// must be a member of the thread, the question open).
type requestState struct {
	Thread   string `json:"t"`
	Question string `json:"q"`
	HITLType string `json:"h"`
}

func (t tool) call(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	p := req.Params
	if p.RequestState != "" || len(p.InputResponses) > 0 {
		return t.resume(ctx, req)
	}
	args := map[string]json.RawMessage{}
	if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
		if err := json.Unmarshal(p.Arguments, &args); err != nil {
			return errorResult(fmt.Sprintf("arguments: want a JSON object: %v", err)), nil
		}
	}
	if t.chat {
		var msg string
		if raw, ok := args["message"]; ok {
			if err := json.Unmarshal(raw, &msg); err != nil {
				return errorResult("message: want a string"), nil
			}
			delete(args, "message")
		}
		m := event.ChatMessage{Role: "user", Blocks: []event.Block{&event.TextBlock{Text: msg}}, AdditionalKwargs: map[string]json.RawMessage{}}
		raw, err := event.MarshalValue([]event.ChatMessage{m})
		if err != nil {
			return nil, fmt.Errorf("mcp: encode message: %w", err)
		}
		args["messages"] = raw
	}
	s, err := t.g.Start(ctx, gateway.RunRequest{User: t.user, Class: t.class, AgentID: t.agentID, Event: t.spec.EventName, Body: args})
	if err != nil {
		return errorResult(err.Error()), nil
	}
	return t.follow(ctx, req, s)
}

// resume answers the question an elicitation asked and follows the run.
func (t tool) resume(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	p := req.Params
	var st requestState
	data, err := base64.RawURLEncoding.DecodeString(p.RequestState)
	if err == nil {
		err = json.Unmarshal(data, &st)
	}
	if err != nil || st.Thread == "" || st.Question == "" {
		return errorResult("requestState: not one this server made"), nil
	}
	res, ok := p.InputResponses[st.Question].(*sdk.ElicitResult)
	if !ok {
		return errorResult(fmt.Sprintf("inputResponses: no answer to question %s", st.Question)), nil
	}
	if res.Action != "accept" {
		return errorResult(fmt.Sprintf("the question was %sd: the agent still waits for an answer, until its timeout", strings.TrimSuffix(res.Action, "e"))), nil
	}
	value, err := json.Marshal(res.Content["response"])
	if err != nil || string(value) == "null" {
		return errorResult("the answer has no response"), nil
	}
	s, err := t.g.Answer(ctx, gateway.AnswerRequest{User: t.user, Thread: st.Thread, Question: st.Question, Response: value})
	if err != nil {
		return errorResult(err.Error()), nil
	}
	return t.follow(ctx, req, s)
}

// follow waits for the run's end: its answer, its error (isError) or a
// question, asked by elicitation when the client supports it. ChunkEvents
// become progress notifications when the call asked for progress.
func (t tool) follow(ctx context.Context, req *sdk.CallToolRequest, s *gateway.Stream) (*sdk.CallToolResult, error) {
	defer s.Close()
	token := req.Params.GetProgressToken()
	var streamed strings.Builder
	n := 0
	final, err := s.Follow(ctx, func(x gateway.StreamEvent) error {
		if x.Terminal || !event.IsChunk(x.Event) {
			return nil
		}
		c, err := event.UnmarshalAs[event.ChunkEvent](x.Raw)
		if err != nil || c.Content == "" {
			return nil
		}
		streamed.WriteString(c.Content)
		if token != nil {
			n++
			// A lost notification loses only a preview of the answer.
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: c.Content})
		}
		return nil
	}, nil)
	switch {
	case errors.Is(err, gateway.ErrTimeout):
		return errorResult(fmt.Sprintf("no answer from %s/%s in time", s.Class(), s.AgentID())), nil
	case err != nil:
		return nil, err
	}
	e := final.Event
	switch {
	case event.IsException(e):
		msg, _ := final.Exception()
		return errorResult(msg), nil
	case event.IsHITLRequest(e):
		return t.ask(req, s, final)
	}
	text := streamed.String() + gateway.Unstreamed(streamed.String(), final.Text())
	if text == "" {
		text = final.Text()
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}},
		Meta: sdk.Meta{"saap": map[string]string{"thread_id": s.Thread(), "run_id": s.Run()}}}, nil
}

// ask turns a HITL question into an elicitation (an input request the SDK
// sends as elicitation/create to clients before the multi-round-trip
// protocol), or, for a client without elicitation, into a result that
// says what the agent asks.
func (t tool) ask(req *sdk.CallToolRequest, s *gateway.Stream, x gateway.StreamEvent) (*sdk.CallToolResult, error) {
	q, err := event.UnmarshalAs[event.HumanInTheLoopRequestEvent](x.Raw)
	if err != nil {
		return errorResult("the agent asked a question the gateway cannot read"), nil
	}
	typ := "string"
	if q.HITLType == event.HITLConfirmation {
		typ = "boolean"
	}
	if !elicits(req) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: q.Question}},
			StructuredContent: map[string]any{"question": q.Question, "question_id": q.EventID, "thread_id": s.Thread(), "hitl_type": q.HITLType}}, nil
	}
	state, _ := json.Marshal(requestState{Thread: s.Thread(), Question: q.EventID, HITLType: q.HITLType})
	return &sdk.CallToolResult{
		InputRequests: sdk.InputRequestMap{q.EventID: &sdk.ElicitParams{
			Message: q.Question,
			RequestedSchema: map[string]any{"type": "object", "required": []string{"response"},
				"properties": map[string]any{"response": map[string]any{"type": typ, "title": "Answer"}}},
		}},
		RequestState: base64.RawURLEncoding.EncodeToString(state),
	}, nil
}

// elicits reports whether the calling client can answer elicitations.
func elicits(req *sdk.CallToolRequest) bool {
	if req.Session == nil {
		return false
	}
	ip := req.Session.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil
}

func errorResult(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}, IsError: true}
}

// Handler returns the streamable HTTP endpoint of the MCP server. Every
// request passes g's guard (authentication, rate limits); a session
// belongs to the user who opened it, and requests of another user for it
// get 404, as for a session that does not exist.
func Handler(g *gateway.Gateway, o Options) http.Handler {
	o = o.withDefaults()
	owners := &sessions{m: map[string]owner{}}
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		user, _ := gateway.UserFrom(r.Context())
		oo := o
		if id := r.PathValue("id"); id != "" {
			oo.AgentID = id
		}
		return NewServer(g, user, oo)
	}, &sdk.StreamableHTTPOptions{SessionTimeout: sessionIdle})
	return g.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _ := gateway.UserFrom(r.Context())
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			if owner, ok := owners.get(sid); !ok || owner != user.ID {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			if r.Method == http.MethodDelete {
				defer owners.del(sid)
			}
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&claimWriter{ResponseWriter: w, claim: func(sid string) { owners.put(sid, user.ID) }}, r)
	}), nil)
}

// Mount serves the MCP endpoint on g at /mcp, /mcp/{agent_id} and their
// /api/v1/{tenant} forms.
func Mount(g *gateway.Gateway, o Options) {
	h := Handler(g, o)
	for _, p := range []string{"/mcp", "/mcp/{id}", "/api/v1/{tenant}/mcp", "/api/v1/{tenant}/mcp/{id}"} {
		g.Mount(p, h)
	}
}

// sessionIdle is how long an MCP session may stay unused: the SDK then
// closes it, and the gateway forgets its owner a little later.
const sessionIdle = time.Hour

// sessions maps MCP session ids to the users who opened them.
type sessions struct {
	mu sync.Mutex
	m  map[string]owner
}

type owner struct {
	user string
	seen time.Time
}

func (s *sessions) get(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.m[id]
	if ok {
		o.seen = time.Now()
		s.m[id] = o
	}
	return o.user, ok
}

func (s *sessions) put(id, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if len(s.m)%1024 == 1023 {
		for k, o := range s.m {
			if now.Sub(o.seen) > 2*sessionIdle {
				delete(s.m, k)
			}
		}
	}
	s.m[id] = owner{user: user, seen: now}
}

func (s *sessions) del(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// claimWriter records the session id the SDK assigns to a new session.
type claimWriter struct {
	http.ResponseWriter
	claim   func(string)
	claimed bool
}

func (c *claimWriter) WriteHeader(status int) {
	if !c.claimed {
		c.claimed = true
		if sid := c.Header().Get("Mcp-Session-Id"); sid != "" {
			c.claim(sid)
		}
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *claimWriter) Write(b []byte) (int, error) {
	if !c.claimed {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}

// Flush flushes the response, for the SDK's event streams.
func (c *claimWriter) Flush() {
	if !c.claimed {
		c.WriteHeader(http.StatusOK)
	}
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines).
func (c *claimWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// ServeStdio serves the MCP server on the process's standard input and
// output until ctx is done or the client disconnects, every call made as
// user: the MCP host starts the process (a command built on it) and talks
// to it over stdio.
func ServeStdio(ctx context.Context, g *gateway.Gateway, user *event.UserIdentity, o Options) error {
	if user == nil || user.ID == "" {
		return errors.New("mcp: ServeStdio needs the user the calls are made as")
	}
	return NewServer(g, user, o).Run(ctx, &sdk.StdioTransport{})
}

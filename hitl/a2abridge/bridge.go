// Package a2abridge lets a step delegate to an external agent that speaks
// the Agent2Agent (A2A) protocol, through the same durable wait as a
// delegation to an agent of the platform.
//
// A Bridge is an agent class of its own. Each of its agent ids names one
// external A2A agent (Remotes maps the id to the agent's A2A base URL, where
// its card is found). A caller's step delegates to it exactly as to any
// agent, with hitl.Delegate (Delegate here builds the request from a text):
//
//	func (c *Caller) Translate(ctx step.Context, m *event.UserMessageEvent) (*event.AgentInTheLoopRequestEvent, error) {
//		return a2abridge.Delegate("PartnerAgents", "translator", m.User, "Translate: "+text, hitl.DelegateTimeout(time.Minute))
//	}
//
//	func (c *Caller) Translated(ctx step.Context, r *event.AgentInTheLoopResponseEvent) (*event.StopEvent, error) {
//		text := a2abridge.Answer(r) // the remote agent's answer
//		...
//	}
//
// The bridge's run sends the text to the remote agent (message/send, with
// the official a2a-go client) and ends with an LLMStopEvent whose output
// message is the remote answer: the texts of the task's artifacts, or of
// the message the agent answered with. A remote task that fails, is
// rejected or canceled, or asks for input or authentication ends the
// bridge's run with an exception. The caller's runtime brings the stop or
// the exception back into the caller's run as an
// AgentInTheLoopResponseEvent or AgentInTheLoopExceptionEvent, through its
// durable consumers; with hitl.DelegateTimeout, an
// AgentInTheLoopTimeoutEvent comes instead when the remote agent is too
// slow. The caller's run holds nothing while it waits.
//
// The message id sent to the remote agent is the step's idempotency key,
// so a re-run after a crash sends the same message again, which a remote
// agent may recognise.
package a2abridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	core "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
)

// Remote is one external A2A agent.
type Remote struct {
	// URL is the agent's A2A base URL: its card is at
	// URL/.well-known/agent-card.json.
	URL string
	// Header is added to every request to the agent (card included), e.g.
	// an Authorization header.
	Header http.Header
}

// Bridge is the agent class that carries delegations to external A2A
// agents. Run it like any agent (agent.Run); its zero value is not usable,
// call New.
type Bridge struct {
	class   string
	remotes map[string]Remote
	client  *http.Client
	timeout time.Duration

	mu      sync.Mutex
	clients map[string]*a2aclient.Client
}

// Option changes a Bridge.
type Option func(*Bridge)

// WithHTTPClient sets the HTTP client of the calls. Default
// http.DefaultClient.
func WithHTTPClient(c *http.Client) Option { return func(b *Bridge) { b.client = c } }

// WithCallTimeout bounds one call to a remote agent. Default 10 minutes; the
// caller's wait has its own timeout (hitl.DelegateTimeout).
func WithCallTimeout(d time.Duration) Option { return func(b *Bridge) { b.timeout = d } }

// New returns the bridge class called class, whose agent ids are the keys
// of remotes.
func New(class string, remotes map[string]Remote, opts ...Option) (*Bridge, error) {
	if strings.TrimSpace(class) == "" {
		return nil, errors.New("a2abridge: blank class name")
	}
	if len(remotes) == 0 {
		return nil, errors.New("a2abridge: no remote agents")
	}
	b := &Bridge{class: class, remotes: make(map[string]Remote, len(remotes)), client: http.DefaultClient,
		timeout: 10 * time.Minute, clients: map[string]*a2aclient.Client{}}
	for id, r := range remotes {
		if !strings.HasPrefix(r.URL, "http://") && !strings.HasPrefix(r.URL, "https://") {
			return nil, fmt.Errorf("a2abridge: remote %q: URL %q is not an http(s) URL", id, r.URL)
		}
		b.remotes[id] = r
	}
	for _, o := range opts {
		o(b)
	}
	return b, nil
}

// Class returns the bridge's agent class.
func (b *Bridge) Class() string { return b.class }

// Steps returns the bridge's one step.
func (b *Bridge) Steps() []*step.Step { return []*step.Step{step.New(b.Call)} }

// Delegate returns the request a step returns to ask remote (an agent id
// of the bridge class bridgeClass) with text on behalf of user (the user of
// the caller's run, whom the bridge's start event names); opts are
// hitl.Delegate's (hitl.DelegateTimeout bounds the wait).
func Delegate(bridgeClass, remote string, user *event.UserIdentity, text string, opts ...hitl.DelegateOption) (*event.AgentInTheLoopRequestEvent, error) {
	if user == nil {
		return nil, errors.New("a2abridge: delegate: no user")
	}
	start := event.New[event.UserMessageEvent]()
	start.User = user
	start.Messages = []event.ChatMessage{event.Text(event.RoleUser, text)}
	return hitl.Delegate(bridgeClass, remote, start, opts...)
}

// Answer is the remote agent's answer a delegation brought back: the text
// of the bridge's stop event.
func Answer(r *event.AgentInTheLoopResponseEvent) string {
	if r == nil {
		return ""
	}
	if s, ok := r.StopEvent.(*event.LLMStopEvent); ok && len(s.OutputMessages) > 0 {
		return s.OutputMessages[len(s.OutputMessages)-1].Content()
	}
	return ""
}

// Call is the bridge's step: it sends the last message's text to the
// remote agent its agent id names and ends the run with the answer.
func (b *Bridge) Call(ctx step.Context, m *event.UserMessageEvent) (*event.LLMStopEvent, error) {
	id := ctx.Run().AgentID
	if _, ok := b.remotes[id]; !ok {
		return nil, step.Userf("a2abridge: no remote agent %q in bridge %s", id, b.class)
	}
	text := ""
	if n := len(m.Messages); n > 0 {
		text = m.Messages[n-1].Content()
	}
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	c, err := b.clientFor(cctx, id)
	if err != nil {
		return nil, err
	}
	msg := core.NewMessage(core.MessageRoleUser, core.TextPart{Text: text})
	msg.ID = ctx.IdempotencyKey()
	blocking := true
	res, err := c.SendMessage(cctx, &core.MessageSendParams{Message: msg, Config: &core.MessageSendConfig{Blocking: &blocking}})
	if err != nil {
		return nil, fmt.Errorf("a2abridge: %s: %w", id, err)
	}
	answer, err := answerOf(id, res)
	if err != nil {
		return nil, err
	}
	stop := &event.LLMStopEvent{}
	stop.OutputMessages = []event.Message{event.MessageFromString("assistant", answer)}
	return stop, nil
}

// answerOf reads the answer of a message/send result.
func answerOf(id string, res core.SendMessageResult) (string, error) {
	switch r := res.(type) {
	case *core.Message:
		return partsText(r.Parts), nil
	case *core.Task:
		switch r.Status.State {
		case core.TaskStateCompleted:
			var b strings.Builder
			for _, a := range r.Artifacts {
				b.WriteString(partsText(a.Parts))
			}
			if b.Len() == 0 && r.Status.Message != nil {
				b.WriteString(partsText(r.Status.Message.Parts))
			}
			return b.String(), nil
		default:
			why := ""
			if r.Status.Message != nil {
				why = ": " + partsText(r.Status.Message.Parts)
			}
			return "", step.Userf("remote agent %s: task %s is %s%s", id, r.ID, r.Status.State, why)
		}
	}
	return "", fmt.Errorf("a2abridge: %s: unexpected result %T", id, res)
}

func partsText(ps core.ContentParts) string {
	var b strings.Builder
	for _, p := range ps {
		switch p := p.(type) {
		case core.TextPart:
			b.WriteString(p.Text)
		case *core.TextPart:
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// clientFor returns the client of remote id, resolving its card once.
func (b *Bridge) clientFor(ctx context.Context, id string) (*a2aclient.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.clients[id]; ok {
		return c, nil
	}
	r := b.remotes[id]
	var ropts []agentcard.ResolveOption
	for k, vs := range r.Header {
		for _, v := range vs {
			ropts = append(ropts, agentcard.WithRequestHeader(k, v))
		}
	}
	card, err := (&agentcard.Resolver{Client: b.client}).Resolve(ctx, strings.TrimRight(r.URL, "/"), ropts...)
	if err != nil {
		return nil, fmt.Errorf("a2abridge: card of %s at %s: %w", id, r.URL, err)
	}
	c, err := a2aclient.NewFromCard(ctx, card,
		a2aclient.WithJSONRPCTransport(b.client),
		a2aclient.WithInterceptors(headers(r.Header)))
	if err != nil {
		return nil, fmt.Errorf("a2abridge: client of %s: %w", id, err)
	}
	b.clients[id] = c
	return c, nil
}

// headers adds a remote's headers to every call.
type headers http.Header

func (h headers) Before(ctx context.Context, req *a2aclient.Request) (context.Context, error) {
	for k, vs := range h {
		req.Meta[k] = vs
	}
	return ctx, nil
}

func (headers) After(context.Context, *a2aclient.Response) error { return nil }

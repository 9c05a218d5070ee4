package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/topic"
)

// DefaultTimeout bounds one config request, as in the reference requester.
const DefaultTimeout = 5 * time.Second

// Errors callers branch on. Failures of the bus itself (for example
// bus.ErrNoResponders when no config responder is listening) are wrapped
// and reachable with errors.Is as well.
var (
	// ErrNotFound: the platform answered found:false.
	ErrNotFound = errors.New("config: configuration not found")
	// ErrTimeout: no reply arrived within the timeout.
	ErrTimeout = errors.New("config: request timed out")
	// ErrBadReply: the reply is not a config reply.
	ErrBadReply = errors.New("config: malformed reply")
)

// Source provides the raw configuration of an agent instance: a JSON
// object to merge over the agent's defaults (see Load).
type Source interface {
	// Fetch returns the configuration of instance agentID of class. It
	// returns when the answer arrived or ctx is done.
	Fetch(ctx context.Context, class, agentID string) (json.RawMessage, error)
}

// Request is the body of a config request.
type Request struct {
	AgentClass string `json:"agent_class"`
	AgentID    string `json:"agent_id"`
}

// Reply is the body of a config reply. Error replies of the responder
// itself carry error and error_type instead (see bus.RemoteError).
type Reply struct {
	AgentClass string          `json:"agent_class"`
	AgentID    string          `json:"agent_id"`
	Config     json.RawMessage `json:"config"`
	// Found is false when the platform has no configuration to give. A
	// reply without the key counts as found, as in the reference.
	Found bool    `json:"found"`
	Error *string `json:"error"`
}

// Client fetches instance configurations from the platform over the config
// RPC: a core NATS request on aihub.rpc.config.agent.<class>.<id>. It is safe
// for concurrent use.
type Client struct {
	req     bus.Requester
	timeout time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithTimeout sets how long one request may take (default DefaultTimeout);
// d <= 0 keeps the default.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// NewClient returns a Client that sends its requests through r.
func NewClient(r bus.Requester, opts ...Option) *Client {
	c := &Client{req: r, timeout: DefaultTimeout}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Fetch asks for the configuration of instance agentID of class and returns
// its "config" object. It fails with ErrNotFound when the platform answers
// found:false, a *bus.RemoteError for an error reply, ErrTimeout when no reply
// came within the client's timeout, an error wrapping bus.ErrNoResponders
// when nobody listens, and ctx's error when ctx is done first.
func (c *Client) Fetch(ctx context.Context, class, agentID string) (json.RawMessage, error) {
	if c == nil || c.req == nil {
		return nil, errors.New("config: Client has no bus (use NewClient, or Standalone for no RPC)")
	}
	subject, err := topic.AgentConfig(class, agentID).Subject()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return c.fetch(ctx, subject, Request{AgentClass: class, AgentID: agentID})
}

// ProcessRequest is the body of a process's config request.
type ProcessRequest struct {
	ProcessClass string `json:"process_class"`
	ProcessID    string `json:"process_id"`
}

// FetchProcess asks for the configuration of process instance processID of
// class on aihub.rpc.config.process.<class>.<id>, with the errors of Fetch.
func (c *Client) FetchProcess(ctx context.Context, class, processID string) (json.RawMessage, error) {
	if c == nil || c.req == nil {
		return nil, errors.New("config: Client has no bus (use NewClient)")
	}
	subject, err := topic.ProcessConfig(class, processID).Subject()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return c.fetch(ctx, subject, ProcessRequest{ProcessClass: class, ProcessID: processID})
}

func (c *Client) fetch(ctx context.Context, subject string, req any) (json.RawMessage, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("config: encoding the request: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	reply, err := c.req.Request(rctx, &bus.Msg{Subject: subject, Data: body})
	if err != nil {
		if ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w after %v: %s", ErrTimeout, c.timeout, subject)
		}
		return nil, fmt.Errorf("config: request on %s: %w", subject, err)
	}
	return decodeReply(subject, reply)
}

func decodeReply(subject string, reply *bus.Msg) (json.RawMessage, error) {
	// A Requester already reports error replies; this covers one that
	// does not.
	if err := bus.ReplyError(subject, reply); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var r struct {
		Config json.RawMessage `json:"config"`
		Found  *bool           `json:"found"` // nil: no key, which counts as found
		Error  *string         `json:"error"`
	}
	if err := json.Unmarshal(reply.Data, &r); err != nil {
		return nil, fmt.Errorf("%w on %s: %v", ErrBadReply, subject, err)
	}
	if r.Found != nil && !*r.Found {
		msg := "found: false"
		if r.Error != nil && *r.Error != "" {
			msg = *r.Error
		}
		return nil, fmt.Errorf("%w: %s: %s", ErrNotFound, subject, msg)
	}
	cfg := bytes.TrimSpace(r.Config)
	if len(cfg) == 0 || bytes.Equal(cfg, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if cfg[0] != '{' {
		return nil, fmt.Errorf("%w on %s: config is not a JSON object", ErrBadReply, subject)
	}
	return r.Config, nil
}

// Standalone returns a Source for running without the platform: it makes
// no request and returns an empty configuration, so Load yields the
// agent's defaults. Use it for local development and tests.
func Standalone() Source { return standalone{} }

type standalone struct{}

func (standalone) Fetch(context.Context, string, string) (json.RawMessage, error) {
	return json.RawMessage("{}"), nil
}

// Load fetches the configuration of instance agentID of class from src and
// merges it over defaults (see Merge). Fetch errors are returned wrapped; a
// configuration that does not fit T is a *ValidationError.
func Load[T any](ctx context.Context, src Source, class, agentID string, defaults T) (T, error) {
	raw, err := src.Fetch(ctx, class, agentID)
	if err != nil {
		var zero T
		return zero, err
	}
	return Merge(defaults, raw)
}

package anthropic

import (
	"context"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/saap-go/agent/llm"
)

// Name is the registry name of this provider.
const Name = "anthropic"

// DefaultModel is the model used when neither the request nor the
// provider's options name one.
const DefaultModel = "claude-sonnet-4-5"

// DefaultMaxTokens bounds an answer when the request sets no limit; the
// API requires one.
const DefaultMaxTokens = 4096

func init() {
	llm.Register(Name, llm.Factory{
		New:          func() (llm.Provider, error) { return New() },
		EnvKey:       "ANTHROPIC_API_KEY",
		DefaultModel: DefaultModel,
	})
}

// Option configures a Provider.
type Option func(*config)

type config struct {
	model string
	opts  []option.RequestOption
}

// WithAPIKey sets the API key; without it the SDK reads ANTHROPIC_API_KEY.
func WithAPIKey(key string) Option {
	return func(c *config) { c.opts = append(c.opts, option.WithAPIKey(key)) }
}

// WithBaseURL points the client at another server (a proxy, a test
// server); without it the SDK reads ANTHROPIC_BASE_URL.
func WithBaseURL(url string) Option {
	return func(c *config) { c.opts = append(c.opts, option.WithBaseURL(url)) }
}

// WithHTTPClient sets the HTTP client the SDK sends through.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) { c.opts = append(c.opts, option.WithHTTPClient(hc)) }
}

// WithModel sets the model used when a request names none.
func WithModel(model string) Option { return func(c *config) { c.model = model } }

// WithRequestOptions passes options to the SDK's client as they are
// (retries, headers, timeouts, middleware).
func WithRequestOptions(opts ...option.RequestOption) Option {
	return func(c *config) { c.opts = append(c.opts, opts...) }
}

// Provider calls Anthropic's messages API. It is safe for concurrent use.
type Provider struct {
	client sdk.Client
	cfg    config
}

var (
	_ llm.Provider  = (*Provider)(nil)
	_ llm.Generator = (*Provider)(nil)
)

// New returns a provider configured from the environment (the SDK's
// ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) and then opts, which win.
func New(opts ...Option) (*Provider, error) {
	cfg := config{model: DefaultModel}
	for _, o := range opts {
		o(&cfg)
	}
	return &Provider{client: sdk.NewClient(cfg.opts...), cfg: cfg}, nil
}

// Name returns "anthropic".
func (p *Provider) Name() string { return Name }

func (p *Provider) params(req *llm.Request) (sdk.MessageNewParams, error) {
	if req == nil {
		return sdk.MessageNewParams{}, fmt.Errorf("%s: nil request", Name)
	}
	params, err := NewParams(req, p.cfg.model)
	if err != nil {
		return params, fmt.Errorf("%s: %w", Name, err)
	}
	return params, nil
}

// Stream starts a streaming message.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	s := p.client.Messages.NewStreaming(ctx, params)
	if err := s.Err(); err != nil {
		s.Close()
		return nil, mapError(err, false)
	}
	return &stream{sdk: s}, nil
}

// Generate makes a non-streaming message.
func (p *Provider) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	m, err := p.client.Messages.New(ctx, params)
	if err != nil {
		return nil, mapError(err, false)
	}
	return FromMessage(m), nil
}

package openai

import (
	"context"
	"fmt"
	"net/http"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/saap-go/agent/llm"
)

// Name is the registry name of this provider.
const Name = "openai"

// DefaultModel is the model used when neither the request nor the
// provider's options name one.
const DefaultModel = "gpt-4.1-mini"

func init() {
	llm.Register(Name, llm.Factory{
		New:          func() (llm.Provider, error) { return New() },
		EnvKey:       "OPENAI_API_KEY",
		DefaultModel: DefaultModel,
	})
}

// Option configures a Provider.
type Option func(*config)

type config struct {
	baseURL     bool
	name        string
	model       string
	opts        []option.RequestOption
	maxTokensV1 bool
	embedModel  string
	embedDims   int
}

// WithAPIKey sets the API key; without it the SDK reads OPENAI_API_KEY.
func WithAPIKey(key string) Option {
	return func(c *config) { c.opts = append(c.opts, option.WithAPIKey(key)) }
}

// WithBaseURL points the client at another server (a proxy, a test
// server, an OpenAI-compatible one); without it the SDK reads
// OPENAI_BASE_URL, else uses OpenAI's.
func WithBaseURL(url string) Option {
	return func(c *config) {
		c.baseURL = true
		c.opts = append(c.opts, option.WithBaseURL(url))
	}
}

// HasBaseURL reports whether opts include WithBaseURL.
func HasBaseURL(opts ...Option) bool {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c.baseURL
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

// WithName sets the name the provider reports (for providers built on
// this one, such as openaicompat).
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithLegacyMaxTokens sends the token limit as "max_tokens" instead of
// "max_completion_tokens", for servers that know only the older field.
func WithLegacyMaxTokens() Option { return func(c *config) { c.maxTokensV1 = true } }

// Provider calls OpenAI's chat completions. It is safe for concurrent use.
type Provider struct {
	client oai.Client
	cfg    config
}

var (
	_ llm.Provider  = (*Provider)(nil)
	_ llm.Generator = (*Provider)(nil)
)

// New returns a provider configured from the environment (the SDK's
// OPENAI_API_KEY, OPENAI_BASE_URL, …) and then opts, which win.
func New(opts ...Option) (*Provider, error) {
	cfg := config{name: Name, model: DefaultModel}
	for _, o := range opts {
		o(&cfg)
	}
	return &Provider{client: oai.NewClient(cfg.opts...), cfg: cfg}, nil
}

// Name returns the registry name ("openai" unless WithName changed it).
func (p *Provider) Name() string { return p.cfg.name }

func (p *Provider) params(req *llm.Request) (oai.ChatCompletionNewParams, error) {
	if req == nil {
		return oai.ChatCompletionNewParams{}, fmt.Errorf("%s: nil request", p.cfg.name)
	}
	params, err := NewParams(req, p.cfg.model, p.cfg.maxTokensV1)
	if err != nil {
		return params, fmt.Errorf("%s: %w", p.cfg.name, err)
	}
	return params, nil
}

// Stream starts a streaming chat completion. Usage is asked for
// (stream_options.include_usage) and arrives before the stop event.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	params.StreamOptions.IncludeUsage = oai.Bool(true)
	s := p.client.Chat.Completions.NewStreaming(ctx, params)
	if err := s.Err(); err != nil {
		s.Close()
		return nil, mapError(p.cfg.name, err)
	}
	return &stream{sdk: s, provider: p.cfg.name}, nil
}

// Generate makes a non-streaming chat completion.
func (p *Provider) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	c, err := p.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return nil, mapError(p.cfg.name, err)
	}
	return FromCompletion(c)
}

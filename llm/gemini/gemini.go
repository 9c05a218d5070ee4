package gemini

import (
	"context"
	"fmt"
	"iter"
	"net/http"

	"google.golang.org/genai"

	"github.com/saap-go/agent/llm"
)

// Name is the registry name of this provider.
const Name = "gemini"

// DefaultModel is the model used when neither the request nor the
// provider's options name one.
const DefaultModel = "gemini-2.5-flash"

func init() {
	llm.Register(Name, llm.Factory{
		New:          func() (llm.Provider, error) { return New() },
		EnvKey:       "GEMINI_API_KEY",
		DefaultModel: DefaultModel,
	})
}

// Option configures a Provider.
type Option func(*genai.ClientConfig, *string)

// WithAPIKey sets the API key; without it the SDK reads GEMINI_API_KEY
// or GOOGLE_API_KEY.
func WithAPIKey(key string) Option {
	return func(c *genai.ClientConfig, _ *string) { c.APIKey = key }
}

// WithBaseURL points the client at another server (a proxy, a test
// server).
func WithBaseURL(url string) Option {
	return func(c *genai.ClientConfig, _ *string) { c.HTTPOptions.BaseURL = url }
}

// WithHTTPClient sets the HTTP client the SDK sends through.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *genai.ClientConfig, _ *string) { c.HTTPClient = hc }
}

// WithModel sets the model used when a request names none.
func WithModel(model string) Option {
	return func(_ *genai.ClientConfig, m *string) { *m = model }
}

// WithClientConfig edits the SDK's client configuration directly
// (retries, headers, timeouts, the Vertex AI backend).
func WithClientConfig(f func(*genai.ClientConfig)) Option {
	return func(c *genai.ClientConfig, _ *string) { f(c) }
}

// Provider calls the Gemini API. It is safe for concurrent use.
type Provider struct {
	client     *genai.Client
	model      string
	embedModel string
	embedDims  int
}

var (
	_ llm.Provider  = (*Provider)(nil)
	_ llm.Generator = (*Provider)(nil)
)

// New returns a provider for the Gemini API configured by opts.
func New(opts ...Option) (*Provider, error) {
	// The SDK retries only when asked; ask for its default policy.
	cc := &genai.ClientConfig{Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{RetryOptions: &genai.HTTPRetryOptions{}}}
	model := DefaultModel
	for _, o := range opts {
		o(cc, &model)
	}
	c, err := genai.NewClient(context.Background(), cc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return &Provider{client: c, model: model}, nil
}

// Name returns "gemini".
func (p *Provider) Name() string { return Name }

// Stream starts a streamGenerateContent call.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	call, err := p.request(req)
	if err != nil {
		return nil, err
	}
	seq := p.client.Models.GenerateContentStream(ctx, call.Model, call.Contents, call.Config)
	next, stop := iter.Pull2(seq)
	s := &stream{next: next, stop: stop}
	// Pull the first chunk now, so a refused request fails here, as it
	// does with the other providers.
	if !s.pull() && s.rawErr != nil {
		stop()
		return nil, mapError(s.rawErr, false)
	}
	return s, nil
}

// Generate makes a non-streaming generateContent call.
func (p *Provider) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	call, err := p.request(req)
	if err != nil {
		return nil, err
	}
	r, err := p.client.Models.GenerateContent(ctx, call.Model, call.Contents, call.Config)
	if err != nil {
		return nil, mapError(err, false)
	}
	return FromResponse(r)
}

func (p *Provider) request(req *llm.Request) (*Call, error) {
	if req == nil {
		return nil, fmt.Errorf("%s: nil request", Name)
	}
	call, err := NewCall(req, p.model)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return call, nil
}

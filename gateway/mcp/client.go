package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/saap-go/agent/llm"
)

// Server names an MCP server a step takes tools from: a command speaking
// MCP on its standard input and output, or a streamable HTTP URL.
type Server struct {
	// Command starts a stdio server. Set Command or URL.
	Command *exec.Cmd
	// URL is a streamable HTTP endpoint.
	URL string
	// Header is sent with every HTTP request (Authorization, ...).
	Header http.Header
	// HTTPClient sends the HTTP requests. Default http.DefaultClient.
	HTTPClient *http.Client
}

// Client is a connection to an MCP server.
type Client struct {
	session *sdk.ClientSession
}

// Connect connects to the MCP server s.
func Connect(ctx context.Context, s Server) (*Client, error) {
	var t sdk.Transport
	switch {
	case s.Command != nil && s.URL != "":
		return nil, errors.New("mcp: Server: set Command or URL, not both")
	case s.Command != nil:
		t = &sdk.CommandTransport{Command: s.Command}
	case s.URL != "":
		hc := s.HTTPClient
		if hc == nil {
			hc = http.DefaultClient
		}
		if len(s.Header) > 0 {
			c := *hc
			c.Transport = headerTransport{base: hc.Transport, header: s.Header}
			hc = &c
		}
		t = &sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc}
	default:
		return nil, errors.New("mcp: Server: set Command or URL")
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "saap-agent", Version: "1"}, nil)
	session, err := c.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: connect: %w", err)
	}
	return &Client{session: session}, nil
}

// Close ends the connection (and a stdio server's process).
func (c *Client) Close() error { return c.session.Close() }

// Tools lists the server's tools as llm.Callable, for the tool loop.
func (c *Client) Tools(ctx context.Context) ([]llm.Callable, error) {
	var out []llm.Callable
	for t, err := range c.session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp: list tools: %w", err)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %s: input schema: %w", t.Name, err)
		}
		out = append(out, &callable{c: c, def: llm.Tool{Name: t.Name, Description: t.Description, Schema: schema}})
	}
	return out, nil
}

// Tools connects to s and returns its tools and a function that closes
// the connection once the tools are no longer needed.
func Tools(ctx context.Context, s Server) ([]llm.Callable, func() error, error) {
	c, err := Connect(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	tools, err := c.Tools(ctx)
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return tools, c.Close, nil
}

// callable is one tool of an MCP server.
type callable struct {
	c   *Client
	def llm.Tool
}

func (t *callable) Definition() llm.Tool { return t.def }

// Call calls the tool. A result marked isError becomes an error holding
// its text, which the loop hands back to the model as a failed result.
func (t *callable) Call(ctx context.Context, input json.RawMessage) (string, error) {
	var args any = map[string]any{}
	if len(input) > 0 {
		args = input
	}
	res, err := t.c.session.CallTool(ctx, &sdk.CallToolParams{Name: t.def.Name, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("mcp: call %s: %w", t.def.Name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(tc.Text)
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		b.Write(data)
	}
	if res.IsError {
		return "", fmt.Errorf("mcp: tool %s: %s", t.def.Name, b.String())
	}
	return b.String(), nil
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := h.base
	if base == nil {
		base = http.DefaultTransport
	}
	r = r.Clone(r.Context())
	for k, vs := range h.header {
		r.Header[k] = vs
	}
	return base.RoundTrip(r)
}

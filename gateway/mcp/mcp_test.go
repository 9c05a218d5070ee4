package mcp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/gateway/internal/adaptertest"
	"github.com/saap-go/agent/gateway/mcp"
)

func start(t testing.TB) *adaptertest.Env {
	return adaptertest.Start(t, nil, func(g *gateway.Gateway) { mcp.Mount(g, mcp.Options{AgentID: "dev"}) })
}

func ctxTimeout(t testing.TB) context.Context { return adaptertest.Ctx(t) }

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens a session of the official Go client as the user of token.
func connect(t testing.TB, e *adaptertest.Env, token string, opts *sdk.ClientOptions) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts)
	s, err := c.Connect(ctxTimeout(t), &sdk.StreamableClientTransport{Endpoint: e.Server.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { _ = s.Close() })
	}
	return s, err
}

func text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func TestToolsAndCalls(t *testing.T) {
	e := start(t)
	progress := make(chan *sdk.ProgressNotificationParams, 16)
	s, err := connect(t, e, adaptertest.TokenAlice, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			progress <- r.Params
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.ListTools(ctxTimeout(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 || list.Tools[0].Name != adaptertest.Class {
		t.Fatalf("tools %+v", list.Tools)
	}
	schema, _ := json.Marshal(list.Tools[0].InputSchema)
	var sc struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	_ = json.Unmarshal(schema, &sc)
	if sc.Type != "object" || sc.Properties["message"] == nil || sc.Properties["user"] != nil || sc.Properties["event_id"] != nil ||
		!slices.Contains(sc.Required, "message") {
		t.Errorf("input schema %s: want the start event's without framework fields, with message", schema)
	}

	params := &sdk.CallToolParams{Name: adaptertest.Class, Arguments: map[string]any{"message": "hi"}}
	params.SetProgressToken("p1")
	res, err := s.CallTool(ctxTimeout(t), params)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || text(res) != "Hello, world" {
		t.Fatalf("call: %+v %q", res, text(res))
	}
	// The client hands notifications to the handler on its own
	// goroutines: their order is in the progress count.
	got := make([]string, 2)
	for range 2 {
		select {
		case p := <-progress:
			if i := int(p.Progress) - 1; i >= 0 && i < 2 {
				got[i] = p.Message
			}
		case <-ctxTimeout(t).Done():
			t.Fatalf("progress notifications: got %q before the timeout", got)
		}
	}
	if !slices.Equal(got, []string{"Hel", "lo"}) {
		t.Errorf("progress %q, want the chunks", got)
	}

	res, err = s.CallTool(ctxTimeout(t), &sdk.CallToolParams{Name: adaptertest.Class, Arguments: map[string]any{"message": adaptertest.Fail}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), "reference") {
		t.Errorf("failing run: %+v %q, want isError", res, text(res))
	}

	// Without elicitation, the question is the answer.
	res, err = s.CallTool(ctxTimeout(t), &sdk.CallToolParams{Name: adaptertest.Class, Arguments: map[string]any{"message": adaptertest.Ask}})
	if err != nil {
		t.Fatal(err)
	}
	sc2, _ := res.StructuredContent.(map[string]any)
	if res.IsError || text(res) != adaptertest.Question || len(sc2["question_id"].(string)) != 24 {
		t.Errorf("question without elicitation: %+v", res)
	}
}

func TestElicitation(t *testing.T) {
	e := start(t)
	var asked []string
	s, err := connect(t, e, adaptertest.TokenAlice, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked = append(asked, r.Params.Message)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"response": "Ada"}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.CallTool(ctxTimeout(t), &sdk.CallToolParams{Name: adaptertest.Class, Arguments: map[string]any{"message": adaptertest.Ask}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || text(res) != "Hello, Ada!" || !slices.Equal(asked, []string{adaptertest.Question}) {
		t.Fatalf("elicited call: %+v %q, asked %q", res, text(res), asked)
	}
}

// Bob can neither use Alice's session nor answer her question.
func TestCrossUser(t *testing.T) {
	e := start(t)
	alice, err := connect(t, e, adaptertest.TokenAlice, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := alice.CallTool(ctxTimeout(t), &sdk.CallToolParams{Name: adaptertest.Class, Arguments: map[string]any{"message": adaptertest.Ask}})
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	question, thread := sc["question_id"].(string), sc["thread_id"].(string)

	// Alice's session id, with Bob's token.
	req, _ := http.NewRequest(http.MethodPost, e.Server.URL+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`))
	req.Header.Set("Authorization", "Bearer "+adaptertest.TokenBob)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", alice.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("Bob on Alice's session: %d, want 404", resp.StatusCode)
	}

	bob, err := connect(t, e, adaptertest.TokenBob, nil)
	if err != nil {
		t.Fatal(err)
	}
	state, _ := json.Marshal(map[string]string{"t": thread, "q": question, "h": "input"})
	res, err = bob.CallTool(ctxTimeout(t), &sdk.CallToolParams{Name: adaptertest.Class,
		RequestState:   base64.RawURLEncoding.EncodeToString(state),
		InputResponses: sdk.InputResponseMap{question: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"response": "Mallory"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), "not a member") {
		t.Errorf("Bob answers Alice's question: %+v %q, want a refusal", res, text(res))
	}

	if _, err := connect(t, e, "nobody", nil); err == nil {
		t.Error("a client without a valid token connected")
	}
}

// The client half: the gateway's tools as llm.Callable.
func TestClientTools(t *testing.T) {
	e := start(t)
	tools, closeFn, err := mcp.Tools(ctxTimeout(t), mcp.Server{URL: e.Server.URL + "/mcp",
		Header: http.Header{"Authorization": {"Bearer " + adaptertest.TokenAlice}}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if len(tools) != 1 || tools[0].Definition().Name != adaptertest.Class || !json.Valid(tools[0].Definition().Schema) {
		t.Fatalf("tools %+v", tools)
	}
	out, err := tools[0].Call(ctxTimeout(t), json.RawMessage(`{"message":"hi"}`))
	if err != nil || out != "Hello, world" {
		t.Fatalf("call: %q %v", out, err)
	}
	if _, err := tools[0].Call(ctxTimeout(t), json.RawMessage(`{"message":"fail"}`)); err == nil || !strings.Contains(err.Error(), "reference") {
		t.Fatalf("failing call: %v, want the tool's error", err)
	}
}

// TestStdio serves the gateway's tools over stdio in a child process (this
// test binary) and calls them through mcp.Tools with a command.
func TestStdio(t *testing.T) {
	e := start(t)
	url := e.Bus.(*natsbus.Bus).Conn().ConnectedUrl()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStdioChild$")
	cmd.Env = append(os.Environ(), "SAAP_MCP_STDIO_CHILD="+url)
	cmd.Stderr = os.Stderr
	tools, closeFn, err := mcp.Tools(ctxTimeout(t), mcp.Server{Command: cmd})
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if len(tools) != 1 {
		t.Fatalf("tools %+v", tools)
	}
	out, err := tools[0].Call(ctxTimeout(t), json.RawMessage(`{"message":"hi"}`))
	if err != nil || out != "Hello, world" {
		t.Fatalf("call: %q %v", out, err)
	}
}

// TestStdioChild is the stdio server of TestStdio.
func TestStdioChild(t *testing.T) {
	url := os.Getenv("SAAP_MCP_STDIO_CHILD")
	if url == "" {
		t.Skip("the child process of TestStdio")
	}
	b, err := natsbus.Connect(natsbus.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	g, err := gateway.New(gateway.Config{Bus: b, Auth: gateway.Anonymous(adaptertest.Alice), DiscoveryWindow: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := g.Discover(ctx, adaptertest.Class); err != nil {
		t.Fatal(err)
	}
	if err := mcp.ServeStdio(ctx, g, &adaptertest.Alice, mcp.Options{AgentID: "dev"}); err != nil {
		t.Fatal(err)
	}
}

// TestOfficialClient runs interop/mcp/run.mjs: @modelcontextprotocol/sdk's
// client against the gateway.
func TestOfficialClient(t *testing.T) {
	e := start(t)
	out := adaptertest.RunNode(t, "mcp", e.Server.URL)
	var res struct {
		Tools     []string `json:"tools"`
		Hello     string   `json:"hello"`
		Progress  []string `json:"progress"`
		Elicited  []string `json:"elicited"`
		Ask       string   `json:"ask"`
		Fail      bool     `json:"failIsError"`
		Hijack    int      `json:"hijackStatus"`
		NoToken   string   `json:"noToken"`
		Confirmed string   `json:"confirmed"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	if !slices.Equal(res.Tools, []string{adaptertest.Class}) || res.Hello != "Hello, world" || !slices.Equal(res.Progress, []string{"Hel", "lo"}) {
		t.Errorf("tools and call: %s", out)
	}
	if res.Ask != "Hello, Ada!" || !slices.Equal(res.Elicited, []string{adaptertest.Question}) {
		t.Errorf("elicitation: %s", out)
	}
	if !res.Fail || res.Hijack != http.StatusNotFound || res.NoToken == "" {
		t.Errorf("errors and refusals: %s", out)
	}
}

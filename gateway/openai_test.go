package gateway_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/saap-go/agent/event"
)

// openaiClient is the official OpenAI Go client pointed at the gateway.
func openaiClient(e *env, token string) openai.Client {
	return openai.NewClient(optionsFor(e.srv, token)...)
}

// optionsFor points an OpenAI client at srv as the user of token.
func optionsFor(srv *httptest.Server, token string) []option.RequestOption {
	return []option.RequestOption{
		option.WithBaseURL(srv.URL + "/v1/"),
		option.WithAPIKey(token),
		option.WithHTTPClient(srv.Client()),
		option.WithMaxRetries(0),
	}
}

func testOpenAIStreaming(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	client := openaiClient(e, tokenAlice)
	stream := client.Chat.Completions.NewStreaming(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model:         "EchoAgent/dev_agent",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("late")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	var deltas []string
	var finish []string
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		for _, c := range chunk.Choices {
			deltas = append(deltas, c.Delta.Content)
			if c.FinishReason != "" {
				finish = append(finish, c.FinishReason)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	// Two chunks, then the part of the stop's answer the chunks missed.
	if want := []string{"Hel", "lo", ", world"}; !slices.Equal(deltas, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	if !slices.Equal(finish, []string{"stop"}) {
		t.Errorf("finish reasons = %q", finish)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hello, world" {
		t.Fatalf("accumulated = %+v", acc.Choices)
	}
}

func testOpenAIStreamEndsWithDone(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	resp := post(t, e.srv, tokenAlice, "/v1/chat/completions",
		`{"model":"EchoAgent/dev_agent","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	datas := dataFrames(readSSE(t, resp.Body))
	if len(datas) < 2 || datas[len(datas)-1] != "[DONE]" {
		t.Fatalf("frames %q: want chunks then [DONE]", datas)
	}
	for _, d := range datas[:len(datas)-1] {
		if !strings.Contains(d, `"object":"chat.completion.chunk"`) {
			t.Errorf("not a chunk: %s", d)
		}
	}
}

func testOpenAINonStreaming(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	client := openaiClient(e, tokenAlice)
	res, err := client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model:    "EchoAgent/dev_agent",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Choices) != 1 || res.Choices[0].Message.Content != "Hello" || res.Choices[0].FinishReason != "stop" {
		t.Fatalf("completion = %+v", res.Choices)
	}
	if res.Object != "chat.completion" || res.ID == "" {
		t.Errorf("object %q id %q", res.Object, res.ID)
	}
	got := e.agent.wait(t, ctxTimeout(t))
	if got.subject.Name != "UserMessageEvent" || !strings.Contains(string(got.raw), `"be brief"`) {
		t.Errorf("agent got %s: %s", got.subject.Name, got.raw)
	}
}

func testOpenAIHITLChatFlow(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	client := openaiClient(e, tokenAlice)
	thread := "0123456789abcdef01234567"
	meta := shared.Metadata{"thread_id": thread, "display_id": "76543210fedcba9876543210"}
	res, err := client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "EchoAgent/dev_agent", Metadata: meta,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("ask")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Choices[0].Message.Content; c != "Which colour?" {
		t.Fatalf("content %q, want the HITL question", c)
	}
	// The next message in the thread answers the open question.
	res, err = client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "EchoAgent/dev_agent", Metadata: meta,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("ask"), openai.AssistantMessage("Which colour?"), openai.UserMessage("green"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Choices[0].Message.Content; c != "You chose green" {
		t.Fatalf("content %q", c)
	}
	// Bob cannot continue Alice's thread.
	bobClient := openaiClient(e, tokenBob)
	_, err = bobClient.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "EchoAgent/dev_agent", Metadata: meta,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden {
		t.Errorf("bob: err %v, want 403", err)
	}
}

func testOpenAIErrors(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	cases := []struct {
		model, text string
		status      int
		msg         string
	}{
		{"NoAgent/x", "hi", 404, "unknown agent class"},
		{"EchoAgent/", "hi", 400, "model"},
		{"/dev_agent", "hi", 400, "model"},
		{"EchoAgent/dev_agent", "fail", 418, "the teapot refuses"},
	}
	for _, c := range cases {
		client := openaiClient(e, tokenAlice)
		_, err := client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
			Model:    c.model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(c.text)},
		})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("%s: err %v, want an API error", c.model, err)
		}
		if apiErr.StatusCode != c.status || !strings.Contains(apiErr.Message, c.msg) {
			t.Errorf("%s/%s: status %d message %q, want %d containing %q", c.model, c.text, apiErr.StatusCode, apiErr.Message, c.status, c.msg)
		}
	}
	nobody := openaiClient(e, "nope")
	if _, err := nobody.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "EchoAgent/dev_agent", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}); err == nil {
		t.Error("unknown token accepted")
	}
}

// Every chunk and the final object name the requested model; usage comes
// from the run's LLMCostEvents, and is null when there were none.
func testOpenAIModelAndUsage(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	client := openaiClient(e, tokenAlice)
	const model = "EchoAgent/dev_agent"
	stream := client.Chat.Completions.NewStreaming(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model:         model,
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("costly")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var models []string
	var last openai.ChatCompletionChunk
	for stream.Next() {
		last = stream.Current()
		models = append(models, last.Model)
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(models) < 3 || slices.ContainsFunc(models, func(m string) bool { return m != model }) {
		t.Errorf("chunk models %q, want %q in every chunk", models, model)
	}
	if u := last.Usage; u.PromptTokens != 30 || u.CompletionTokens != 12 || u.TotalTokens != 42 {
		t.Errorf("streamed usage %+v, want 30+12=42", u)
	}

	res, err := client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("costly")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != model || res.Usage.PromptTokens != 30 || res.Usage.CompletionTokens != 12 || res.Usage.TotalTokens != 42 {
		t.Errorf("completion model %q usage %+v, want %q and 30+12=42", res.Model, res.Usage, model)
	}

	resp := post(t, e.srv, tokenAlice, "/v1/chat/completions", `{"model":"EchoAgent/dev_agent","messages":[{"role":"user","content":"hi"}]}`)
	body := decodeJSON(t, resp.Body)
	if u, ok := body["usage"]; !ok || u != nil || body["model"] != model {
		t.Errorf("without cost events: model %v usage %v, want %q and null", body["model"], body["usage"], model)
	}
}

// A client that picks a model from GET /v1/models can use it: a class alone
// talks to the gateway's default agent id. Usage comes from the run's LLM
// events when it has no LLMCostEvents.
func testOpenAIListedModelAndLLMUsage(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	client := openaiClient(e, tokenAlice)
	page, err := client.Models.List(ctxTimeout(t))
	if err != nil || len(page.Data) == 0 {
		t.Fatalf("models %+v: %v", page, err)
	}
	model := page.Data[0].ID
	res, err := client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tokens")},
	})
	if err != nil {
		t.Fatalf("chat with the listed model %q: %v", model, err)
	}
	if got := e.agent.wait(t, ctxTimeout(t)); got.subject.ID != "default" {
		t.Errorf("the start went to agent id %q, want the default agent id", got.subject.ID)
	}
	if u := res.Usage; u.PromptTokens != 11 || u.CompletionTokens != 4 || u.TotalTokens != 15 {
		t.Errorf("usage %+v, want the LLM events' 8+3 and 3+1", u)
	}
	stream := client.Chat.Completions.NewStreaming(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tokens")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var last openai.ChatCompletionChunk
	for stream.Next() {
		last = stream.Current()
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if u := last.Usage; u.TotalTokens != 15 {
		t.Errorf("streamed usage %+v, want 15 tokens", u)
	}
}

// Parameters the endpoint cannot honour get a 400 in OpenAI's shape,
// naming the parameter, not silence.
func testOpenAIUnsupportedParameters(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	client := openaiClient(e, tokenAlice)
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}
	for _, c := range []struct {
		param string
		req   openai.ChatCompletionNewParams
	}{
		{"tools", openai.ChatCompletionNewParams{Model: "EchoAgent/dev_agent", Messages: msgs,
			Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "lookup"})}}},
		{"n", openai.ChatCompletionNewParams{Model: "EchoAgent/dev_agent", Messages: msgs, N: openai.Int(2)}},
	} {
		_, err := client.Chat.Completions.New(ctxTimeout(t), c.req)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != c.param {
			t.Errorf("%s: %v, want a 400 naming the parameter", c.param, err)
		}
	}
}

// GET /v1/models lists the conversational classes in OpenAI's format.
func testOpenAIModels(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	// A class without a chat start event is not a model.
	if err := e.gw.AddClass(&event.AgentClassDiscoveryResponseEvent{AgentClass: "CronOnly", StartEvents: []event.EventSpecs{{
		EventName: "CronStartEvent", EventParents: []string{"CronStartEvent", "StartEvent", "ControlAndDisplayEvent", "ControlEvent", "DisplayEvent"},
	}}}); err != nil {
		t.Fatal(err)
	}
	client := openaiClient(e, tokenAlice)
	page, err := client.Models.List(ctxTimeout(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		if m.Object != "model" || m.OwnedBy == "" || m.Created == 0 {
			t.Errorf("model %+v: want object, owned_by and created", m)
		}
	}
	if !slices.Equal(ids, []string{"EchoAgent"}) {
		t.Errorf("models %q, want [EchoAgent]", ids)
	}
	m, err := client.Models.Get(ctxTimeout(t), "EchoAgent")
	if err != nil || m.ID != "EchoAgent" {
		t.Errorf("Get(EchoAgent) = %+v, %v", m, err)
	}
	_, err = client.Models.Get(ctxTimeout(t), "CronOnly")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || !strings.Contains(apiErr.Message, "not conversational") {
		t.Errorf("Get(CronOnly) = %v, want 404 not conversational", err)
	}
}

// Every error of the OpenAI endpoints has OpenAI's shape.
func testOpenAIErrorShape(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	get := func(token, path string) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	chat := `{"model":"EchoAgent/dev_agent","messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name   string
		resp   *http.Response
		status int
		typ    string
	}{
		{"bad token", post(t, e.srv, "nope", "/v1/chat/completions", chat), 401, "authentication_error"},
		{"bad token on models", get("nope", "/v1/models"), 401, "authentication_error"},
		{"not JSON", post(t, e.srv, tokenAlice, "/v1/chat/completions", `{`), 400, "invalid_request_error"},
		{"unknown model", post(t, e.srv, tokenAlice, "/v1/chat/completions", `{"model":"Nope/x","messages":[{"role":"user","content":"hi"}]}`), 404, "not_found_error"},
		{"agent exception", post(t, e.srv, tokenAlice, "/v1/chat/completions", `{"model":"EchoAgent/dev_agent","messages":[{"role":"user","content":"fail"}]}`), 418, "invalid_request_error"},
		{"unknown route", post(t, e.srv, tokenAlice, "/v1/completions", chat), 404, "not_found_error"},
		{"wrong method", get(tokenAlice, "/v1/chat/completions"), 405, "invalid_request_error"},
		{"tenant route", get("nope", "/api/v1/acme/openai/models"), 401, "authentication_error"},
	}
	for _, c := range cases {
		var body struct {
			Error map[string]json.RawMessage `json:"error"`
		}
		data, _ := io.ReadAll(c.resp.Body)
		if err := json.Unmarshal(data, &body); err != nil || c.resp.StatusCode != c.status {
			t.Errorf("%s: %d %s, want %d with an OpenAI error", c.name, c.resp.StatusCode, data, c.status)
			continue
		}
		for _, k := range []string{"message", "type", "param", "code"} {
			if _, ok := body.Error[k]; !ok {
				t.Errorf("%s: error %s lacks %q", c.name, data, k)
			}
		}
		if string(body.Error["type"]) != `"`+c.typ+`"` {
			t.Errorf("%s: type %s, want %s", c.name, body.Error["type"], c.typ)
		}
	}
}

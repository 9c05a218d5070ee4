package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
)

type verdict struct {
	Suitable bool     `json:"suitable" jsonschema:"description=whether the agent can answer"`
	Reason   string   `json:"reason"`
	Topics   []string `json:"topics"`
}

func ask() *llm.Request {
	return &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("Is this a question about taxes?")}}
}

// TestGenerateObject: a valid answer decodes into the type, and the
// request carries the schema generated from it, strict and named after
// the type, while the caller's request is left as it was.
func TestGenerateObject(t *testing.T) {
	p := llmtest.New(llmtest.Reply(`{"suitable": true, "reason": "it is", "topics": ["tax"]}`))
	req := ask()
	v, err := llm.GenerateObject[verdict](context.Background(), p, req)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(verdict{Suitable: true, Reason: "it is", Topics: []string{"tax"}}, v); d != "" {
		t.Errorf("value (-want +got):\n%s", d)
	}
	if req.ResponseSchema != nil {
		t.Error("GenerateObject changed the caller's request")
	}
	rs := p.Requests()[0].ResponseSchema
	if rs == nil {
		t.Fatal("the request carries no response schema")
	}
	if rs.Name != "verdict" || !rs.Strict {
		t.Errorf("schema name %q strict %v, want verdict and strict", rs.Name, rs.Strict)
	}
	var s struct {
		Type       string         `json:"type"`
		Required   []string       `json:"required"`
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(rs.Schema, &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || len(s.Required) != 3 || s.Properties["suitable"] == nil {
		t.Errorf("schema = %s", rs.Schema)
	}
}

// TestGenerateObjectInvalid: each way an answer can fail comes back as an
// *ObjectError with the raw answer and a cause that says what is wrong.
func TestGenerateObjectInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		turn *llmtest.Turn
		want string
	}{
		{"not JSON", llmtest.Reply(`Yes, it is about taxes.`), "not JSON"},
		{"wrong type", llmtest.Reply(`{"suitable": "yes", "reason": "r", "topics": []}`), "does not match the schema"},
		{"missing property", llmtest.Reply(`{"suitable": true, "topics": []}`), "does not match the schema"},
		{"extra property", llmtest.Reply(`{"suitable": true, "reason": "r", "topics": [], "mood": "x"}`), "does not match the schema"},
		{"cut short", llmtest.Reply(`{"suitable": true, "rea`).Stop(llm.StopMaxTokens), "token limit"},
		{"refused", llmtest.Reply(`I can't help with that.`).Stop(llm.StopRefusal), "refused"},
		{"tool call", llmtest.NewTurn().Tool("c1", "search", `{}`), "called tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := llmtest.New(tc.turn)
			_, err := llm.GenerateObject[verdict](context.Background(), p, ask())
			var oe *llm.ObjectError
			if !errors.As(err, &oe) {
				t.Fatalf("err = %v, want an *ObjectError", err)
			}
			if !errors.Is(err, llm.ErrInvalidObject) {
				t.Error("the error does not match ErrInvalidObject")
			}
			if !strings.Contains(oe.Err.Error(), tc.want) {
				t.Errorf("cause = %v, want it to say %q", oe.Err, tc.want)
			}
			if testing.Verbose() {
				t.Log(err)
			}
			if oe.Response == nil || oe.Raw != oe.Response.Message.Text() {
				t.Errorf("raw answer %q not the response's text", oe.Raw)
			}
		})
	}
}

// TestGenerateObjectRepair: with WithRepair an invalid answer goes back to
// the model with what is wrong, once; without it there is one call only.
func TestGenerateObjectRepair(t *testing.T) {
	bad := `{"suitable": "yes"}`
	good := `{"suitable": false, "reason": "off topic", "topics": []}`
	p := llmtest.New(llmtest.Reply(bad), llmtest.Reply(good))
	v, err := llm.GenerateObject[verdict](context.Background(), p, ask(), llm.WithRepair())
	if err != nil {
		t.Fatal(err)
	}
	if v.Reason != "off topic" {
		t.Errorf("value = %+v", v)
	}
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d calls, want 2", len(reqs))
	}
	msgs := reqs[1].Messages
	if len(msgs) != 3 || msgs[1].Text() != bad || !strings.Contains(msgs[2].Text(), "does not match the schema") {
		t.Errorf("repair conversation = %+v", msgs)
	}

	p = llmtest.New(llmtest.Reply(bad), llmtest.Reply(bad))
	if _, err := llm.GenerateObject[verdict](context.Background(), p, ask(), llm.WithRepair()); !errors.Is(err, llm.ErrInvalidObject) {
		t.Errorf("two bad answers: err = %v", err)
	}
	p = llmtest.New(llmtest.Reply(bad), llmtest.Reply(good))
	if _, err := llm.GenerateObject[verdict](context.Background(), p, ask()); !errors.Is(err, llm.ErrInvalidObject) {
		t.Errorf("without repair: err = %v", err)
	}
	if p.Remaining() != 1 {
		t.Errorf("without repair the model was called %d times", 2-p.Remaining())
	}
}

// TestGenerateObjectOwnSchema: a ResponseSchema the caller sets is sent
// and validated as given, and a provider's failure comes back as it is.
func TestGenerateObjectOwnSchema(t *testing.T) {
	rs := &llm.ResponseSchema{Name: "score", Schema: json.RawMessage(`{"type":"object","properties":{"score":{"type":"integer","minimum":0,"maximum":10}},"required":["score"]}`)}
	type score struct {
		Score int `json:"score"`
	}
	req := ask()
	req.ResponseSchema = rs
	p := llmtest.New(llmtest.Reply(`{"score": 11}`), llmtest.Reply("```json\n{\"score\": 7}\n```"))
	if _, err := llm.GenerateObject[score](context.Background(), p, req); !errors.Is(err, llm.ErrInvalidObject) {
		t.Errorf("score 11: err = %v, want invalid (maximum 10)", err)
	}
	v, err := llm.GenerateObject[score](context.Background(), p, req)
	if err != nil || v.Score != 7 {
		t.Errorf("fenced answer: %+v, %v", v, err)
	}
	if p.Requests()[0].ResponseSchema != rs {
		t.Error("the caller's schema was not sent")
	}

	fail := &llm.Error{Kind: llm.ErrRateLimited, Provider: "scripted"}
	p = llmtest.New(llmtest.NewTurn().FailToOpen(fail))
	if _, err := llm.GenerateObject[score](context.Background(), p, req); !errors.Is(err, fail) || errors.Is(err, llm.ErrInvalidObject) {
		t.Errorf("provider failure: err = %v", err)
	}
	bad := *req
	bad.ResponseSchema = &llm.ResponseSchema{Schema: json.RawMessage(`[1,`)}
	if _, err := llm.GenerateObject[score](context.Background(), p, &bad); err == nil || errors.Is(err, llm.ErrInvalidObject) {
		t.Errorf("broken schema: err = %v, want a schema error", err)
	}
}

// TestResponseSchemaOf: optional fields make a schema that strict mode
// does not take, so it is sent without strict.
func TestResponseSchemaOf(t *testing.T) {
	type loose struct {
		A string `json:"a"`
		B string `json:"b,omitempty"`
	}
	rs, err := llm.ResponseSchemaOf[loose]()
	if err != nil {
		t.Fatal(err)
	}
	if rs.Strict {
		t.Errorf("schema %s marked strict with an optional property", rs.Schema)
	}
	type nested struct {
		V verdict `json:"v"`
	}
	if rs, err := llm.ResponseSchemaOf[nested](); err != nil || !rs.Strict {
		t.Errorf("nested closed struct: strict %v, %v (%s)", rs != nil && rs.Strict, err, rs.Schema)
	}
	if _, err := llm.ResponseSchemaOf[chan int](); err == nil {
		t.Error("a channel got a schema")
	}
}

// TestParseObject decodes a streamed call's answer.
func TestParseObject(t *testing.T) {
	resp := &llm.Response{Message: llm.AssistantText(`{"suitable": true, "reason": "r", "topics": []}`), StopReason: llm.StopEndTurn}
	v, err := llm.ParseObject[verdict](resp, nil)
	if err != nil || !v.Suitable {
		t.Errorf("%+v, %v", v, err)
	}
	if _, err := llm.ParseObject[verdict](nil, nil); err == nil {
		t.Error("nil response parsed")
	}
}

// TestLLMEventNamesTheSchema: the call's record says it asked for a
// structured answer, in its invocation parameters.
func TestLLMEventNamesTheSchema(t *testing.T) {
	rs, err := llm.ResponseSchemaOf[verdict]()
	if err != nil {
		t.Fatal(err)
	}
	req := ask()
	req.ResponseSchema = rs
	ev := llm.NewLLMEvent("scripted", req, &llm.Response{Message: llm.AssistantText("{}")})
	got := string(ev.InvocationParameters["response_format"])
	if got != `{"name":"verdict","strict":true,"type":"json_schema"}` {
		t.Errorf("response_format = %s", got)
	}
}

// FuzzParseObject: any answer decodes or fails with an *ObjectError,
// never panics.
func FuzzParseObject(f *testing.F) {
	for _, s := range []string{`{"suitable": true, "reason": "r", "topics": []}`, "```json\n{}\n```", "```", `[`, `null`, `{"topics": [1]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := llm.ParseObject[verdict](&llm.Response{Message: llm.AssistantText(s)}, nil)
		if err != nil && !errors.Is(err, llm.ErrInvalidObject) {
			t.Fatalf("error %v is not an *ObjectError", err)
		}
	})
}

// TestParseObjectConcurrent: the cached schema of a type is shared by
// concurrent calls (run with -race).
func TestParseObjectConcurrent(t *testing.T) {
	type shared struct {
		N int `json:"n"`
	}
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			resp := &llm.Response{Message: llm.AssistantText(fmt.Sprintf(`{"n": %d}`, i))}
			v, err := llm.ParseObject[shared](resp, nil)
			if err == nil && v.N != i {
				err = fmt.Errorf("got %d, want %d", v.N, i)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// BenchmarkParseObject: checking and decoding one structured answer with
// the type's cached schema.
func BenchmarkParseObject(b *testing.B) {
	resp := &llm.Response{Message: llm.AssistantText(`{"suitable": true, "reason": "the question is about income tax", "topics": ["tax", "income"]}`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := llm.ParseObject[verdict](resp, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestObjectErrorMessage: a long answer is cut in the message on a
// character boundary, and kept whole in Raw.
func TestObjectErrorMessage(t *testing.T) {
	long := strings.Repeat("ä", 150)
	e := &llm.ObjectError{Raw: long, Err: errors.New("not JSON")}
	msg := e.Error()
	if !utf8.ValidString(msg) || !strings.Contains(msg, "not JSON") || !strings.Contains(msg, "…") || len(msg) > 300 {
		t.Errorf("message %q", msg)
	}
	if e.Raw != long {
		t.Error("Raw was cut")
	}
}

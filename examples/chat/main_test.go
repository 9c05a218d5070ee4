package main

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/exectest"
	"github.com/saap-go/agent/internal/oispec"
)

// The example is built once and run as a process, as a user runs it.
func TestChatExample(t *testing.T) {
	bin := exectest.Build(t)

	t.Run("demo", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env())
		if err != nil {
			t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		for _, want := range []string{
			"display UserMessageEvent", "control UserMessageEvent",
			"display ChunkEvent", "control LLMStopEvent", "display LLMStopEvent",
			"control LimitChatHistoryEvent", `display ConversationTitleEvent             title="Hello! What can you do?"`,
			"display FollowUpQuestionsEvent",
			".display_event.ChunkEvent.", "answer (LLMStopEvent): I am ChatAgent",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("ask", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env(), "-ask", "Why is the sky blue?")
		if err != nil {
			t.Fatalf("exit: %v\n%s\n%s", err, out, stderr)
		}
		if !strings.Contains(out, `answer (LLMStopEvent): You asked: "Why is the sky blue?"`) {
			t.Errorf("output:\n%s", out)
		}
	})

	t.Run("openai-compatible model", func(t *testing.T) {
		// A stand-in for an OpenAI-compatible server: it streams two chunks.
		// The first request is the answer's; the title and the follow-up
		// questions come after it, in parallel.
		var mu sync.Mutex
		var gotModel string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/chat/completions" {
				http.NotFound(w, r)
				return
			}
			body, _ := bufio.NewReader(r.Body).ReadString(0)
			mu.Lock()
			if gotModel == "" {
				gotModel = body
			}
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			for _, piece := range []string{"Rayleigh ", "scattering."} {
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", piece)
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		}))
		defer srv.Close()
		out, stderr, err := exectest.Run(t, bin, time.Minute,
			exectest.Env("OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY=k", "OPENAI_MODEL=tiny-model"), "-ask", "Why?")
		if err != nil {
			t.Fatalf("exit: %v\n%s\n%s", err, out, stderr)
		}
		if !strings.Contains(out, "answer (LLMStopEvent): Rayleigh scattering.") || !strings.Contains(out, `"Rayleigh "`) {
			t.Errorf("output:\n%s", out)
		}
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(gotModel, `"tiny-model"`) || !strings.Contains(gotModel, `"Why?"`) {
			t.Errorf("request to the model: %s", gotModel)
		}
	})

	t.Run("trace", func(t *testing.T) {
		// An OTLP/HTTP receiver: it decodes the protobuf the exporter sends.
		rcv := &oispec.Receiver{}
		srv := httptest.NewServer(rcv)
		defer srv.Close()
		out, stderr, err := exectest.Run(t, bin, time.Minute,
			exectest.Env("OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL, "SAAP_TRACE_LANGFUSE=true"), "-trace", "-ask", "Hi")
		if err != nil {
			t.Fatalf("exit: %v\n%s\n%s", err, out, stderr)
		}
		if want := "tracing: spans go to " + srv.URL + "/v1/traces (OTLP http/protobuf)"; !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
		received, errs := rcv.Spans()
		if errs != nil {
			t.Fatalf("receiver: %v", errs)
		}
		spans := map[string]*tracepb.Span{}
		for _, sp := range received {
			spans[sp.Name] = sp
			// Every span is as the OpenInference specification has it.
			for _, bad := range oispec.Check(sp) {
				t.Errorf("span %q: %s", sp.Name, bad)
			}
		}
		run, llm := spans["run ChatAgent"], spans["LLMStopEvent"]
		if run == nil || llm == nil || spans["step Answer"] == nil {
			t.Fatalf("spans received: %d (%v)\nstderr:\n%s", len(spans), spans, stderr)
		}
		got := map[string]string{}
		for _, kv := range llm.Attributes {
			got[kv.Key] = kv.Value.GetStringValue()
		}
		if got["openinference.span.kind"] != "LLM" || got["langfuse.observation.type"] != "generation" ||
			got["llm.output_messages.0.message.role"] != "assistant" {
			t.Errorf("LLMStopEvent span attributes %v", got)
		}
	})

	t.Run("serve", func(t *testing.T) {
		p := exectest.Start(t, bin, exectest.Env(), "-serve", "127.0.0.1:0")
		line := p.WaitLine(t, "gateway listening on ", time.Minute)
		base := strings.Fields(strings.TrimPrefix(line, "gateway listening on "))[0]
		// Any instance id is served.
		resp, err := http.Post(base+"/api/v1/acme/agents/classes/ChatAgent/instances/some-profile/UserMessageEvent/stream",
			"application/json", strings.NewReader(`{"messages":[{"role":"user","content":"Hello"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		var datas []string
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				datas = append(datas, d)
			}
		}
		resp.Body.Close()
		if len(datas) < 3 || datas[len(datas)-1] != "[DONE]" {
			t.Fatalf("stream: %q", datas)
		}
		if last, err := event.Unmarshal([]byte(datas[len(datas)-2])); err != nil || event.Name(last) != "LLMStopEvent" {
			t.Fatalf("last event of the stream: %v (%s)", err, datas[len(datas)-2])
		}
		p.Signal(t, syscall.SIGTERM)
		if err := p.Wait(t, time.Minute); err != nil {
			t.Fatalf("exit after SIGTERM: %v\nstderr:\n%s", err, p.Stderr())
		}
	})

	t.Run("serve binds to loopback and refuses reachable addresses", func(t *testing.T) {
		p := exectest.Start(t, bin, exectest.Env(), "-serve", ":0")
		line := p.WaitLine(t, "gateway listening on ", time.Minute)
		if !strings.Contains(line, "http://127.0.0.1:") {
			t.Errorf("listening line %q, want a loopback address", line)
		}
		p.Signal(t, syscall.SIGTERM)
		if err := p.Wait(t, time.Minute); err != nil {
			t.Fatalf("exit after SIGTERM: %v\nstderr:\n%s", err, p.Stderr())
		}
		_, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env(), "-serve", "0.0.0.0:0")
		if err == nil || !strings.Contains(stderr, "anonymous") {
			t.Errorf("anonymous gateway on 0.0.0.0: err %v, stderr %q", err, stderr)
		}
	})
}

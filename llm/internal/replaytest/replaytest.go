// Package replaytest serves recorded provider answers to the providers'
// official SDKs in tests, and checks what every provider must satisfy.
package replaytest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/llm"
)

// Server answers every request with one recorded body, as the provider
// would, and keeps the request bodies it got.
type Server struct {
	Status int
	Header http.Header
	Body   []byte
	// Streaming tells a streaming request from a plain one, for the
	// Content-Type of a successful answer.
	Streaming func(req *http.Request, body []byte) bool

	mu  sync.Mutex
	got [][]byte
}

// StreamField is Streaming for providers whose request body says
// "stream": true.
func StreamField(_ *http.Request, body []byte) bool {
	var probe struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &probe)
	return probe.Stream
}

func (r *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.got = append(r.got, b)
	r.mu.Unlock()
	for k, vs := range r.Header {
		w.Header()[k] = vs
	}
	if (r.Status == 0 || r.Status == http.StatusOK) && r.Streaming != nil && r.Streaming(req, b) {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	if r.Status != 0 {
		w.WriteHeader(r.Status)
	}
	_, _ = w.Write(r.Body)
}

// Request returns the last request body the server got, decoded.
func (r *Server) Request(t *testing.T) map[string]any {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) == 0 {
		t.Fatal("the server got no request")
	}
	var m map[string]any
	if err := json.Unmarshal(r.got[len(r.got)-1], &m); err != nil {
		t.Fatalf("request body is not JSON: %v", err)
	}
	return m
}

// Start serves the testdata file name with status and header until the
// test ends.
func Start(t testing.TB, status int, header http.Header, name string, streaming func(*http.Request, []byte) bool) (*Server, *httptest.Server) {
	t.Helper()
	r := &Server{Status: status, Header: header, Body: Fixture(t, name), Streaming: streaming}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv
}

// Fixture reads the testdata file name.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Question is the request every recorded answer answers.
func Question() *llm.Request {
	return &llm.Request{Messages: []llm.Message{llm.UserText("What is the capital of Switzerland?")}}
}

// Collect streams the recorded answer name through the provider open
// returns and folds it.
func Collect(t *testing.T, open func(t testing.TB, name string) llm.Provider, name string) (*llm.Response, error) {
	t.Helper()
	s, err := open(t, name).Stream(context.Background(), Question())
	if err != nil {
		t.Fatalf("Stream(%s): %v", name, err)
	}
	return llm.Collect(s)
}

// Pair names a recorded stream and the non-streaming answer it must fold
// into.
type Pair struct{ Stream, Answer string }

// CollectEqualsGenerate is the accumulator property: each stream,
// collected, equals the non-streaming answer of the same response.
func CollectEqualsGenerate(t *testing.T, open func(t testing.TB, name string) llm.Provider, pairs []Pair) {
	for _, tc := range pairs {
		t.Run(tc.Stream, func(t *testing.T) {
			got, err := Collect(t, open, tc.Stream)
			if err != nil {
				t.Fatalf("Collect: %v", err)
			}
			want, err := llm.Generate(context.Background(), open(t, tc.Answer), Question())
			if err != nil {
				t.Fatalf("Generate(%s): %v", tc.Answer, err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("Collect(Stream) differs from Generate (-generate +collect):\n%s", d)
			}
		})
	}
}

// City is the value every recorded structured answer describes.
type City struct {
	City       string   `json:"city"`
	Population int      `json:"population"`
	Languages  []string `json:"languages"`
}

// Bern is the City of the valid recorded structured answers.
var Bern = City{City: "Bern", Population: 134794, Languages: []string{"German"}}

// ObjectQuestion is the request every recorded structured answer answers.
func ObjectQuestion() *llm.Request {
	return &llm.Request{Messages: []llm.Message{llm.UserText("Describe the capital of Switzerland.")}}
}

// Objects checks structured answers: GenerateObject on the non-streaming
// answer valid returns Bern, the stream validStream collected parses
// (ParseObject) into Bern too, and each answer in invalid is an
// *llm.ObjectError holding the answer's text.
func Objects(t *testing.T, open func(t testing.TB, name string) llm.Provider, valid, validStream string, invalid ...string) {
	t.Helper()
	t.Run(valid, func(t *testing.T) {
		got, err := llm.GenerateObject[City](context.Background(), open(t, valid), ObjectQuestion())
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(Bern, got); d != "" {
			t.Errorf("GenerateObject (-want +got):\n%s", d)
		}
	})
	t.Run(validStream, func(t *testing.T) {
		s, err := open(t, validStream).Stream(context.Background(), ObjectQuestion())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := llm.Collect(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := llm.ParseObject[City](resp, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(Bern, got); d != "" {
			t.Errorf("ParseObject of the stream (-want +got):\n%s", d)
		}
	})
	for _, name := range invalid {
		t.Run(name, func(t *testing.T) {
			_, err := llm.GenerateObject[City](context.Background(), open(t, name), ObjectQuestion())
			var oe *llm.ObjectError
			if !errors.As(err, &oe) {
				t.Fatalf("err = %v, want an *llm.ObjectError", err)
			}
			if oe.Response == nil || oe.Raw != oe.Response.Message.Text() {
				t.Errorf("Raw = %q, not the answer's text", oe.Raw)
			}
			t.Log(err)
		})
	}
}

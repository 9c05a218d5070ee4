package main

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/dev"
	"github.com/saap-go/agent/event"
)

func TestGreeterInDevMode(t *testing.T) {
	t.Setenv("NATS_URL", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var banner strings.Builder
	s, err := dev.Start(ctx, dev.Config{Addr: "127.0.0.1:0", Out: &banner}, Greeter{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.Contains(banner.String(), s.Curl("Greeter")) {
		t.Errorf("the banner lacks the curl line:\n%s", banner.String())
	}
	resp, err := http.Post(s.URL()+"/agents/Greeter/dev/UserMessageEvent/stream", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"Hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var chunks string
	var last event.Event
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "[DONE]" {
			if last, err = event.Unmarshal([]byte(d)); err != nil {
				t.Fatal(err)
			}
			if c, ok := last.(*event.ChunkEvent); ok {
				chunks += c.Content
			}
		}
	}
	if a, ok := last.(*Answered); chunks != "Hello! You said: Hi" || !ok || a.Answer != chunks {
		t.Errorf("chunks %q, last event %#v", chunks, last)
	}
}

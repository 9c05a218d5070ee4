package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"
	"github.com/saap-go/agent/topic"
)

func postAs(t *testing.T, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// The cancel route publishes a RunCancelRequestedEvent on the run's control
// subject for the members of the run's thread; to anybody else the run is
// unknown (the same 404 as a run that does not exist, and nothing is
// published); an ended run is a 409, bad input a 400.
func TestRunCancelRoute(t *testing.T) {
	for _, b := range buses {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b.new)
			resp := post(t, e.srv, tokenAlice, blockPath, msgs)
			thread := resp.Header.Get("X-Thread-Id")
			sto := memstore.New()
			display := event.NewID()
			put := func(run, thread string, state status.State) {
				st := status.Record{Class: "EchoAgent", Run: run, AgentID: "dev_agent", Thread: thread, Display: display, State: state}
				raw, _ := json.Marshal(st)
				if err := sto.PutStatus(t.Context(), store.RunKey{Class: "EchoAgent", Run: run}, thread, raw); err != nil {
					t.Fatal(err)
				}
			}
			put("done", thread, status.Completed)
			put("busy", thread, status.Running)
			put("other", "bobsthread", status.Running)
			sub, err := status.Serve(t.Context(), e.bus, sto, "EchoAgent", nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sub.Unsubscribe() })
			got := make(chan *bus.Msg, 16)
			csub, err := e.bus.Subscribe(t.Context(), "agent.EchoAgent.*.*.*.*.control_event.RunCancelRequestedEvent.*", "", func(m *bus.Msg) { got <- m })
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = csub.Unsubscribe() })

			base := e.srv.URL + "/api/v1/saap/runs/EchoAgent/"
			_, unknown := postAs(t, base+"nope/cancel", tokenAlice, "")
			for _, tc := range []struct {
				run, token, body string
				want             int
			}{
				{"busy", tokenBob, "", http.StatusNotFound},      // not a member
				{"other", tokenAlice, "", http.StatusNotFound},   // another thread
				{"nope", tokenAlice, "", http.StatusNotFound},    // unknown run
				{"busy", "", "", http.StatusUnauthorized},        // no token
				{"a.b", tokenAlice, "", http.StatusBadRequest},   // invalid run id
				{"done", tokenAlice, "", http.StatusConflict},    // ended
				{"busy", tokenAlice, "{", http.StatusBadRequest}, // not JSON
				{"busy", tokenAlice, `{"reason":"` + strings.Repeat("x", event.MaxCancelReason+1) + `"}`, http.StatusBadRequest},
			} {
				code, body := postAs(t, base+tc.run+"/cancel", tc.token, tc.body)
				if code != tc.want {
					t.Errorf("cancel %s as %q: %d %s, want %d", tc.run, tc.token, code, body, tc.want)
				}
				if tc.want == http.StatusNotFound && tc.run != "nope" {
					if want := strings.Replace(string(unknown), "nope", tc.run, 1); string(body) != want {
						t.Errorf("foreign run %s: %s, want %s", tc.run, body, want)
					}
				}
			}
			if code, body := postAs(t, e.srv.URL+"/api/v1/saap/runs/NoSuchAgent/busy/cancel", tokenAlice, ""); code != http.StatusNotFound {
				t.Errorf("unknown class: %d %s", code, body)
			}
			select {
			case m := <-got:
				t.Fatalf("a refused cancel published %s", m.Subject)
			default:
			}

			code, body := postAs(t, base+"busy/cancel", tokenAlice, `{"reason":"changed my mind"}`)
			if code != http.StatusAccepted {
				t.Fatalf("alice cancels her run: %d %s", code, body)
			}
			select {
			case m := <-got:
				tp, err := topic.ParseAgent(m.Subject)
				if err != nil || tp.ID != "dev_agent" || tp.Thread != thread || tp.Display != display || tp.Run != "busy" {
					t.Errorf("request on %s, want the run's subject", m.Subject)
				}
				ev, err := event.Unmarshal(m.Data)
				req, ok := ev.(*event.RunCancelRequestedEvent)
				if err != nil || !ok || req.Reason != "changed my mind" || req.RequestedBy != "alice" {
					t.Errorf("request %s (%v)", m.Data, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no RunCancelRequestedEvent published")
			}
		})
	}
}

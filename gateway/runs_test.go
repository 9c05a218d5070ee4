package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"
)

func getAs(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
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
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// A run's status is shown to the members of its thread only; a thread's
// runs list for its members, filtered and paged.
func TestRunStatusRoutes(t *testing.T) {
	for _, b := range buses {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b.new)
			// Alice's thread, made by her first request.
			resp := post(t, e.srv, tokenAlice, blockPath, msgs)
			thread := resp.Header.Get("X-Thread-Id")
			sto := memstore.New()
			put := func(run, thread string, state status.State) {
				st := status.Record{Class: "EchoAgent", Run: run, AgentID: "dev_agent", Thread: thread, State: state}
				raw, _ := json.Marshal(st)
				if err := sto.PutStatus(t.Context(), store.RunKey{Class: "EchoAgent", Run: run}, thread, raw); err != nil {
					t.Fatal(err)
				}
			}
			put("run1", thread, status.Completed)
			put("run2", thread, status.Waiting)
			put("run3", thread, status.Failed)
			put("other", "bobsthread", status.Running)
			sub, err := status.Serve(t.Context(), e.bus, sto, "EchoAgent", nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sub.Unsubscribe() })

			code, body := getAs(t, e.srv.URL+"/api/v1/saap/runs/EchoAgent/run2", tokenAlice)
			var st status.Record
			if code != http.StatusOK || json.Unmarshal(body, &st) != nil || st.State != status.Waiting {
				t.Fatalf("alice's run: %d %s", code, body)
			}
			for _, tc := range []struct {
				path, token string
				want        int
			}{
				{"/api/v1/saap/runs/EchoAgent/run2", tokenBob, http.StatusNotFound},     // not a member
				{"/api/v1/saap/runs/EchoAgent/other", tokenAlice, http.StatusNotFound},  // another thread
				{"/api/v1/saap/runs/EchoAgent/nope", tokenAlice, http.StatusNotFound},   // unknown run
				{"/api/v1/saap/runs/NoSuchAgent/run2", tokenAlice, http.StatusNotFound}, // unknown class
				{"/api/v1/saap/runs/EchoAgent/run2", "", http.StatusUnauthorized},       // no token
				{"/api/v1/saap/runs/EchoAgent/a.b", tokenAlice, http.StatusBadRequest},  // invalid run id
				{"/api/v1/saap/threads/" + thread + "/runs?class=EchoAgent", tokenBob, http.StatusForbidden},
				{"/api/v1/saap/threads/" + thread + "/runs", tokenAlice, http.StatusBadRequest},
				{"/api/v1/saap/threads/" + thread + "/runs?class=EchoAgent&status=paused", tokenAlice, http.StatusBadRequest},
				{"/api/v1/saap/threads/" + thread + "/runs?class=EchoAgent&limit=0", tokenAlice, http.StatusBadRequest},
			} {
				if code, body := getAs(t, e.srv.URL+tc.path, tc.token); code != tc.want {
					t.Errorf("GET %s as %q: %d %s, want %d", tc.path, tc.token, code, body, tc.want)
				}
			}
			// A foreign run is answered as an unknown one: same status, same
			// body but for the run id, and no thread id.
			_, unknown := getAs(t, e.srv.URL+"/api/v1/saap/runs/EchoAgent/nope", tokenAlice)
			for _, tc := range []struct{ run, token, thread string }{{"run2", tokenBob, thread}, {"other", tokenAlice, "bobsthread"}} {
				code, body := getAs(t, e.srv.URL+"/api/v1/saap/runs/EchoAgent/"+tc.run, tc.token)
				want := strings.Replace(string(unknown), "nope", tc.run, 1)
				if code != http.StatusNotFound || string(body) != want || strings.Contains(string(body), tc.thread) {
					t.Errorf("foreign run %s: %d %s, want 404 %s", tc.run, code, body, want)
				}
			}
			// Paging through the thread's finished runs.
			var got []string
			url := e.srv.URL + "/api/v1/saap/threads/" + thread + "/runs?class=EchoAgent&status=completed,failed&limit=1"
			next := ""
			for range 5 {
				u := url
				if next != "" {
					u += "&after=" + next
				}
				code, body := getAs(t, u, tokenAlice)
				var page status.Page
				if code != http.StatusOK || json.Unmarshal(body, &page) != nil {
					t.Fatalf("GET %s: %d %s", u, code, body)
				}
				for _, r := range page.Runs {
					got = append(got, r.Run)
				}
				if next = page.Next; next == "" {
					break
				}
			}
			if len(got) != 2 || got[0] != "run1" || got[1] != "run3" {
				t.Fatalf("paged runs %v, want [run1 run3]", got)
			}
		})
	}
}

// Run status reads have a per-user budget of their own: each is a request
// to the runners, so a user polling in a loop gets 429 with Retry-After,
// and another user is not affected.
func TestRunStatusIsRateLimited(t *testing.T) {
	e := newEnv(t, buses[0].new, func(c *gateway.Config) { c.StatusRateLimit, c.StatusBurst = 0.01, 3 })
	url := e.srv.URL + "/api/v1/saap/runs/EchoAgent/nope"
	for i := range 3 {
		if code, body := getAs(t, url, tokenAlice); code == http.StatusTooManyRequests {
			t.Fatalf("request %d within the burst: %d %s", i+1, code, body)
		}
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+tokenAlice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the budget: %d, Retry-After %q, want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if code, body := getAs(t, url, tokenBob); code == http.StatusTooManyRequests {
		t.Fatalf("bob, within his own budget: %d %s", code, body)
	}
}

package profiles_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/gateway/profiles"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/step"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var seq atomic.Int64

// unique names a bucket or class for one test, so runs against a shared
// NATS_URL do not meet each other's state.
func unique(prefix string) string {
	return fmt.Sprintf("%s%d%d", prefix, time.Now().UnixNano()%1e9, seq.Add(1))
}

// connect returns a bus on NATS_URL, or on an embedded server.
func connect(t *testing.T) *natsbus.Bus {
	t.Helper()
	url := os.Getenv("NATS_URL")
	if url == "" {
		srv, err := natsserver.Start(natsserver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
		url = srv.URL()
	}
	b, err := natsbus.Connect(natsbus.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func newStore(t *testing.T, b *natsbus.Bus) *profiles.Store {
	t.Helper()
	bucket := unique("profiles_test_")
	st, err := profiles.NewStore(t.Context(), b.JetStream(), profiles.StoreConfig{Bucket: bucket, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.JetStream().DeleteKeyValue(context.Background(), bucket) })
	return st
}

func cfg(s string) json.RawMessage { return json.RawMessage(s) }

func TestStoreCompareAndSet(t *testing.T) {
	st := newStore(t, connect(t))
	ctx := t.Context()
	p, err := st.Create(ctx, profiles.Profile{Class: "Digest", AgentID: "daily", Config: cfg(`{"greeting":"hi"}`), UpdatedBy: "ada"})
	if err != nil || p.Revision == 0 {
		t.Fatalf("create: %+v, %v", p, err)
	}
	if _, err := st.Create(ctx, profiles.Profile{Class: "Digest", AgentID: "daily", Config: cfg(`{}`)}); !errors.Is(err, profiles.ErrExists) {
		t.Errorf("second create: %v, want ErrExists", err)
	}
	// Two edits made from the same revision: the first wins, the second
	// is refused rather than undoing it.
	first, err := st.Update(ctx, profiles.Profile{Class: "Digest", AgentID: "daily", Config: cfg(`{"greeting":"one"}`), Revision: p.Revision})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, profiles.Profile{Class: "Digest", AgentID: "daily", Config: cfg(`{"greeting":"two"}`), Revision: p.Revision}); !errors.Is(err, profiles.ErrConflict) {
		t.Errorf("stale update: %v, want ErrConflict", err)
	}
	got, err := st.Get(ctx, "Digest", "daily")
	if err != nil || string(got.Config) != `{"greeting":"one"}` || got.Revision != first.Revision {
		t.Errorf("get: %+v, %v", got, err)
	}
	if err := st.Delete(ctx, "Digest", "daily", p.Revision); !errors.Is(err, profiles.ErrConflict) {
		t.Errorf("stale delete: %v, want ErrConflict", err)
	}
	if err := st.Delete(ctx, "Digest", "daily", first.Revision); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "Digest", "daily"); !errors.Is(err, profiles.ErrNotFound) {
		t.Errorf("get after delete: %v", err)
	}
	if _, err := st.Update(ctx, profiles.Profile{Class: "Digest", AgentID: "daily", Config: cfg(`{}`), Revision: first.Revision}); !errors.Is(err, profiles.ErrNotFound) {
		t.Errorf("update after delete: %v, want ErrNotFound", err)
	}
	if _, err := st.Create(ctx, profiles.Profile{Class: "Digest", AgentID: "daily", Config: cfg(`{}`)}); err != nil {
		t.Errorf("create after delete: %v", err)
	}
	for _, bad := range [][2]string{{"Di.gest", "x"}, {"Digest", "a b"}, {"Digest", "*"}, {"", "x"}} {
		if _, err := st.Get(ctx, bad[0], bad[1]); err == nil || errors.Is(err, profiles.ErrNotFound) {
			t.Errorf("get %q: %v, want a clear refusal", bad, err)
		}
	}
	if _, err := st.Create(ctx, profiles.Profile{Class: "Digest", AgentID: "list", Config: cfg(`[1]`)}); err == nil {
		t.Error("a configuration that is not an object was stored")
	}
}

func TestStoreSchedules(t *testing.T) {
	st := newStore(t, connect(t))
	ctx := t.Context()
	for id, c := range map[string]string{
		"daily":  `{"cron":{"minute":"0","hour":"7","day_of_month":"*","month":"*","day_of_week":"*","timezone":"Europe/Zurich"}}`,
		"manual": `{"cron":null}`,
		"none":   `{}`,
		"broken": `{"cron":{"minute":"0"}}`,
	} {
		if _, err := st.Create(ctx, profiles.Profile{Class: "Digest", AgentID: id, Config: cfg(c)}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := st.Schedules(ctx)
	if len(list) != 1 || list[0].AgentID != "daily" || list[0].Cron.Timezone != "Europe/Zurich" {
		t.Errorf("schedules %+v", list)
	}
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("the malformed schedule is not reported: %v", err)
	}
}

// The responder answers as the reference's API does.
func TestResponderWire(t *testing.T) {
	b := connect(t)
	st := newStore(t, b)
	ctx := t.Context()
	class := unique("Wire")
	if _, err := st.Create(ctx, profiles.Profile{Class: class, AgentID: "wiki", Config: cfg(`{"agent_id":"wiki","model":"gpt-4o"}`)}); err != nil {
		t.Fatal(err)
	}
	// This test's class only: tests of other packages on a shared
	// NATS_URL run responders and agents of their own.
	only := func(c string) bool { return c == class }
	r, err := profiles.Serve(ctx, b, st, profiles.ResponderOptions{Classes: only})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Stop() }()

	ask := func(body string) (map[string]any, error) {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		m, err := b.Request(rctx, &bus.Msg{Subject: "aihub.rpc.config.agent." + class + ".wiki", Data: []byte(body)})
		if err != nil {
			return nil, err
		}
		var out map[string]any
		if err := json.Unmarshal(m.Data, &out); err != nil {
			t.Fatalf("reply %q: %v", m.Data, err)
		}
		return out, nil
	}
	got, err := ask(`{"agent_class":"` + class + `","agent_id":"wiki"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"agent_class": class, "agent_id": "wiki", "config": map[string]any{"agent_id": "wiki", "model": "gpt-4o"}, "found": true, "error": nil}
	if g, w := mustJSON(got), mustJSON(want); g != w {
		t.Errorf("reply %s, want %s", g, w)
	}
	// The reference answers an instance without a profile with an empty
	// configuration, found.
	got, err = ask(`{"agent_class":"` + class + `","agent_id":"other"}`)
	if err != nil || mustJSON(got["config"]) != `{}` || got["found"] != true {
		t.Errorf("unknown instance: %v, %v", got, err)
	}
	// A request that does not decode gets the reference's error reply.
	var re *bus.RemoteError
	if _, err := ask(`nope`); !errors.As(err, &re) || re.Type != "ValidationError" {
		t.Errorf("malformed request: %v", err)
	}
	// Another class is left for its own responder.
	other := unique("Other")
	octx, ocancel := context.WithTimeout(ctx, time.Second)
	defer ocancel()
	if m, err := b.Request(octx, &bus.Msg{Subject: "aihub.rpc.config.agent." + other + ".wiki", Data: []byte(`{"agent_class":"` + other + `","agent_id":"wiki"}`)}); err == nil {
		t.Errorf("a class outside Classes was answered: %s", m.Data)
	}
	// The config client reads the answer.
	c := config.NewClient(b, config.WithTimeout(10*time.Second))
	raw, err := c.Fetch(ctx, class, "wiki")
	if err != nil || !strings.Contains(string(raw), "gpt-4o") {
		t.Errorf("client: %s, %v", raw, err)
	}
	strict, err := profiles.Serve(ctx, b, st, profiles.ResponderOptions{UnknownNotFound: true, Classes: only})
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Stop()
	defer func() { _ = strict.Stop() }()
	if _, err := c.Fetch(ctx, class, "other"); !errors.Is(err, config.ErrNotFound) {
		t.Errorf("strict responder, unknown instance: %v", err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// settings is the configuration of the test class.
type settings struct {
	Greeting string               `json:"greeting"`
	Level    int                  `json:"level"`
	Tags     []string             `json:"tags"`
	Labels   map[string]string    `json:"labels"`
	Examples []example            `json:"examples"`
	Notes    []event.LocaleString `json:"notes"`
	Teams    map[string]example   `json:"teams"`
}

type example struct {
	Input string `json:"input"`
	Valid bool   `json:"valid"`
}

// classFor is the discovery answer of a schedulable class with settings.
func classFor(t testing.TB, class string) *event.AgentClassDiscoveryResponseEvent {
	t.Helper()
	w, err := step.NewWorkflow(class, step.New(func(ctx step.Context, e *event.CronStartEvent) (*event.StopEvent, error) {
		return event.New[event.StopEvent](), nil
	}, step.Name("Run")))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := discovery.Build(w, discovery.Class{Config: settings{Greeting: "hello", Level: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

type fixture struct {
	url   string
	class string
	st    *profiles.Store
}

// serve runs a gateway with the admin routes: token "admin" is Ada, an
// administrator, "root" is Grace, a system administrator, and "user" is
// Bob, who is neither.
func serve(t *testing.T) *fixture {
	t.Helper()
	b := connect(t)
	st := newStore(t, b)
	yes := true
	gw, err := gateway.New(gateway.Config{Bus: b, RateLimit: -1, MaxRunsPerUser: -1, Auth: gateway.StaticTokens(map[string]event.UserIdentity{
		"admin": {ID: "ada", Name: "Ada", Email: "ada@x", Roles: []string{"user", "admin"}},
		"root":  {ID: "grace", Name: "Grace", Email: "grace@x", Roles: []string{}, IsSysAdmin: &yes},
		"user":  {ID: "bob", Name: "Bob", Email: "bob@x", Roles: []string{"user"}},
	})})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{class: unique("Digest"), st: st}
	if err := gw.AddClass(classFor(t, f.class)); err != nil {
		t.Fatal(err)
	}
	if err := profiles.Mount(gw, profiles.Options{Store: st}); err != nil {
		t.Fatal(err)
	}
	if err := profiles.Mount(gw, profiles.Options{Store: st}); err == nil {
		t.Error("a second Mount on the same gateway succeeded")
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

type reply struct {
	status int
	etag   string
	body   map[string]any
	raw    string
}

func (f *fixture) do(t *testing.T, token, method, path, body string, header ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, f.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, etag: resp.Header.Get("ETag"), raw: string(data)}
	_ = json.Unmarshal(data, &r.body)
	return r
}

const base = `"name":{"de":"T","en":"T","fr":"T","it":"T"},"description":{"de":"d","en":"d","fr":"d","it":"d"}`

func TestAdminRoutes(t *testing.T) {
	f := serve(t)
	p := profiles.Prefix + "/" + f.class

	created := f.do(t, "admin", "POST", p, `{"agent_id":"daily",`+base+`,"greeting":"moin","level":3}`)
	if created.status != http.StatusCreated || created.etag == "" {
		t.Fatalf("create: %d %s", created.status, created.raw)
	}
	got := f.do(t, "admin", "GET", p+"/daily", "")
	if got.status != 200 || got.etag != created.etag || got.body["updated_by"] != "ada" {
		t.Fatalf("get: %d %s", got.status, got.raw)
	}
	if cfg := got.body["config"].(map[string]any); cfg["greeting"] != "moin" || cfg["agent_id"] != "daily" {
		t.Errorf("stored config %v", cfg)
	}

	t.Run("400 for a profile the schema refuses", func(t *testing.T) {
		for name, body := range map[string]string{
			"wrong type":        `{"agent_id":"bad",` + base + `,"level":"high"}`,
			"missing name":      `{"agent_id":"bad","greeting":"x"}`,
			"id not lowercase":  `{"agent_id":"Bad",` + base + `}`,
			"id with a dot":     `{"agent_id":"a.b",` + base + `}`,
			"no agent_id":       `{` + base + `}`,
			"not an object":     `[1,2]`,
			"malformed cron":    `{"agent_id":"bad",` + base + `,"cron":{"minute":"0"}}`,
			"not JSON":          `{"agent_id":`,
			"locale not object": `{"agent_id":"bad","name":"x","description":"y"}`,
		} {
			if r := f.do(t, "admin", "POST", p, body); r.status != http.StatusBadRequest || r.body["detail"] == "" {
				t.Errorf("%s: %d %s", name, r.status, r.raw)
			}
		}
		r := f.do(t, "admin", "PUT", p+"/daily", `{"agent_id":"other",`+base+`}`, "If-Match", created.etag)
		if r.status != http.StatusBadRequest || r.body["field"] != "agent_id" {
			t.Errorf("PUT naming another id: %d %s", r.status, r.raw)
		}
	})

	t.Run("403 for non-admins, before anything is looked up", func(t *testing.T) {
		for _, c := range [][3]string{
			{"GET", profiles.Prefix, ""}, {"GET", p, ""}, {"GET", p + "/daily", ""}, {"GET", p + "/nosuch", ""},
			{"POST", p, `{"agent_id":"mine",` + base + `}`}, {"PUT", p + "/daily", `{` + base + `}`},
			{"DELETE", p + "/daily", ""}, {"GET", p + "/daily/schedule", ""}, {"PUT", p + "/daily/schedule", "null"},
			{"GET", profiles.SchedulesPath, ""},
		} {
			if r := f.do(t, "user", c[0], c[1], c[2], "If-Match", created.etag); r.status != http.StatusForbidden {
				t.Errorf("bob %s %s: %d %s", c[0], c[1], r.status, r.raw)
			}
		}
		if r := f.do(t, "", "GET", p+"/daily", ""); r.status != http.StatusUnauthorized {
			t.Errorf("no token: %d", r.status)
		}
		if r := f.do(t, "root", "GET", p+"/daily", ""); r.status != http.StatusOK {
			t.Errorf("a system administrator: %d %s", r.status, r.raw)
		}
	})

	t.Run("409 on a stale revision or a second create", func(t *testing.T) {
		one := f.do(t, "admin", "PUT", p+"/daily", `{`+base+`,"greeting":"one"}`, "If-Match", created.etag)
		if one.status != 200 || one.etag == created.etag {
			t.Fatalf("first edit: %d %s", one.status, one.raw)
		}
		two := f.do(t, "root", "PUT", p+"/daily", `{`+base+`,"greeting":"two"}`, "If-Match", created.etag)
		if two.status != http.StatusConflict {
			t.Errorf("second edit from the same revision: %d %s", two.status, two.raw)
		}
		if r := f.do(t, "admin", "POST", p, `{"agent_id":"daily",`+base+`}`); r.status != http.StatusConflict {
			t.Errorf("create twice: %d %s", r.status, r.raw)
		}
		if r := f.do(t, "admin", "PUT", p+"/daily", `{`+base+`}`); r.status != http.StatusPreconditionRequired {
			t.Errorf("edit without a revision: %d %s", r.status, r.raw)
		}
		if r := f.do(t, "admin", "DELETE", p+"/daily", "", "If-Match", created.etag); r.status != http.StatusConflict {
			t.Errorf("stale delete: %d %s", r.status, r.raw)
		}
		if g := f.do(t, "admin", "GET", p+"/daily", ""); g.body["config"].(map[string]any)["greeting"] != "one" {
			t.Errorf("after the conflicts: %s", g.raw)
		}
	})

	t.Run("404 for unknown profiles and classes", func(t *testing.T) {
		for _, c := range [][3]string{
			{"GET", p + "/nosuch", ""}, {"PUT", p + "/nosuch", `{` + base + `}`}, {"DELETE", p + "/nosuch", ""},
			{"GET", p + "/nosuch/schedule", ""}, {"PUT", p + "/nosuch/schedule", "null"},
			{"POST", profiles.Prefix + "/NoSuchClass", `{"agent_id":"x",` + base + `}`},
		} {
			if r := f.do(t, "admin", c[0], c[1], c[2], "If-Match", `"1"`); r.status != http.StatusNotFound {
				t.Errorf("%s %s: %d %s", c[0], c[1], r.status, r.raw)
			}
		}
	})

	t.Run("schedules", func(t *testing.T) {
		cur := f.do(t, "admin", "GET", p+"/daily", "")
		cron := `{"minute":"0","hour":"7","day_of_month":"*","month":"*","day_of_week":"1-5","timezone":"Europe/Zurich"}`
		if r := f.do(t, "admin", "PUT", p+"/daily/schedule", `{"minute":"0"}`, "If-Match", cur.etag); r.status != http.StatusBadRequest {
			t.Errorf("malformed cron: %d %s", r.status, r.raw)
		}
		set := f.do(t, "admin", "PUT", p+"/daily/schedule", cron, "If-Match", cur.etag)
		if set.status != 200 {
			t.Fatalf("set schedule: %d %s", set.status, set.raw)
		}
		if g := f.do(t, "admin", "GET", p+"/daily", ""); g.body["config"].(map[string]any)["greeting"] != "one" {
			t.Errorf("setting the schedule changed the rest: %s", g.raw)
		}
		list := f.do(t, "admin", "GET", profiles.SchedulesPath, "")
		scheds, _ := list.body["schedules"].([]any)
		if list.status != 200 || len(scheds) != 1 || !strings.Contains(list.raw, `"day_of_week":"1-5"`) {
			t.Errorf("schedules: %d %s", list.status, list.raw)
		}
		if r := f.do(t, "admin", "PUT", p+"/daily/schedule", `null`, "If-Match", cur.etag); r.status != http.StatusConflict {
			t.Errorf("stale schedule edit: %d %s", r.status, r.raw)
		}
		if r := f.do(t, "admin", "PUT", p+"/daily/schedule", `null`, "If-Match", set.etag); r.status != 200 {
			t.Errorf("remove schedule: %d %s", r.status, r.raw)
		}
		if g := f.do(t, "admin", "GET", p+"/daily/schedule", ""); g.status != 200 || g.body["cron"] != nil {
			t.Errorf("schedule after removal: %d %s", g.status, g.raw)
		}
	})

	t.Run("list and delete", func(t *testing.T) {
		if r := f.do(t, "admin", "POST", p, `{"agent_id":"weekly",`+base+`}`); r.status != 201 {
			t.Fatalf("create: %d %s", r.status, r.raw)
		}
		l := f.do(t, "admin", "GET", p, "")
		if ps, _ := l.body["profiles"].([]any); len(ps) != 2 {
			t.Errorf("list: %s", l.raw)
		}
		if r := f.do(t, "admin", "DELETE", p+"/weekly", ""); r.status != http.StatusNoContent {
			t.Errorf("delete: %d %s", r.status, r.raw)
		}
		if r := f.do(t, "admin", "GET", p+"/weekly", ""); r.status != http.StatusNotFound {
			t.Errorf("get after delete: %d", r.status)
		}
	})
}

// What one administrator saves, another sees and must build on; a user
// who is not one reaches none of it, whoever made it.
func TestCrossUser(t *testing.T) {
	f := serve(t)
	p := profiles.Prefix + "/" + f.class
	a := f.do(t, "admin", "POST", p, `{"agent_id":"shared",`+base+`}`)
	if a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	g := f.do(t, "root", "GET", p+"/shared", "")
	if g.status != 200 || g.body["updated_by"] != "ada" {
		t.Fatalf("the other admin reads: %d %s", g.status, g.raw)
	}
	e := f.do(t, "root", "PUT", p+"/shared", `{`+base+`,"greeting":"grace"}`, "If-Match", g.etag)
	if e.status != 200 {
		t.Fatalf("the other admin edits: %d %s", e.status, e.raw)
	}
	// Ada's edit from her older read is refused, not merged over Grace's.
	if r := f.do(t, "admin", "PUT", p+"/shared", `{`+base+`,"greeting":"ada"}`, "If-Match", a.etag); r.status != http.StatusConflict {
		t.Errorf("stale edit by the first admin: %d %s", r.status, r.raw)
	}
	if r := f.do(t, "user", "GET", p+"/shared", ""); r.status != http.StatusForbidden || strings.Contains(r.raw, "grace") {
		t.Errorf("bob reads: %d %s", r.status, r.raw)
	}
	if r := f.do(t, "user", "DELETE", p+"/shared", ""); r.status != http.StatusForbidden {
		t.Errorf("bob deletes: %d %s", r.status, r.raw)
	}
	if _, err := f.st.Get(t.Context(), f.class, "shared"); err != nil {
		t.Errorf("the profile after bob's attempts: %v", err)
	}
}

// A submission in the shapes the FormKit form produces is stored in the
// shapes the configuration type has.
func TestFormKitShapes(t *testing.T) {
	f := serve(t)
	p := profiles.Prefix + "/" + f.class
	body := `{"agent_id":"forms",` + base + `,
		"tags": {"0": {"value": "a"}, "1": {"value": "b"}},
		"labels": [{"key": "team", "value": "ops"}, {"key": "tier", "value": "1"}],
		"examples": {"0": {"input": "x", "valid": true}},
		"notes": {"0": {"value": {"de": "Hallo", "en": "Hello", "fr": "", "it": ""}}},
		"teams": [{"key": "ops", "value": {"input": "y", "valid": true}}]}`
	r := f.do(t, "admin", "POST", p, body)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	got, err := f.st.Get(t.Context(), f.class, "forms")
	if err != nil {
		t.Fatal(err)
	}
	v, err := config.Merge(settings{}, got.Config)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(v.Tags) != "[a b]" || v.Labels["team"] != "ops" || len(v.Examples) != 1 || !v.Examples[0].Valid ||
		len(v.Notes) != 1 || v.Notes[0].En != "Hello" || !v.Teams["ops"].Valid {
		t.Errorf("stored %s, merged %+v", got.Config, v)
	}
	if r := f.do(t, "admin", "POST", p, `{"agent_id":"dup",`+base+`,"labels":[{"key":"a","value":"1"},{"key":"a","value":"2"}]}`); r.status != 400 {
		t.Errorf("a map with a key twice: %d %s", r.status, r.raw)
	}
}

// Edits racing from one revision: exactly one is saved, every other gets
// 409, and the stored profile is the one that was saved.
func TestConcurrentEdits(t *testing.T) {
	f := serve(t)
	p := profiles.Prefix + "/" + f.class
	c := f.do(t, "admin", "POST", p, `{"agent_id":"race",`+base+`}`)
	if c.status != 201 {
		t.Fatalf("create: %d %s", c.status, c.raw)
	}
	const n = 8
	codes := make(chan [2]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			greeting := fmt.Sprintf("edit %d", i)
			req, _ := http.NewRequestWithContext(t.Context(), "PUT", f.url+p+"/race", strings.NewReader(`{`+base+`,"greeting":"`+greeting+`"}`))
			req.Header.Set("Authorization", "Bearer admin")
			req.Header.Set("If-Match", c.etag)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err) // not Fatal: this is not the test's goroutine
				codes <- [2]string{"error", greeting}
				return
			}
			_ = resp.Body.Close()
			codes <- [2]string{fmt.Sprint(resp.StatusCode), greeting}
		})
	}
	wg.Wait()
	close(codes)
	var saved []string
	conflicts := 0
	for c := range codes {
		switch c[0] {
		case "200":
			saved = append(saved, c[1])
		case "409":
			conflicts++
		default:
			t.Errorf("status %s", c[0])
		}
	}
	if len(saved) != 1 || conflicts != n-1 {
		t.Fatalf("saved %v, %d conflicts", saved, conflicts)
	}
	if g := f.do(t, "admin", "GET", p+"/race", ""); g.body["config"].(map[string]any)["greeting"] != saved[0] {
		t.Errorf("stored %s, saved %q", g.raw, saved[0])
	}
}

// Whatever is submitted, Check answers with a configuration or an error,
// never a panic.
func FuzzCheck(f *testing.F) {
	resp := classFor(f, "Fuzz")
	for _, seed := range []string{
		`{"agent_id":"a",` + base + `}`,
		`{"tags":{"0":{"value":"a"}},"labels":[{"key":"k","value":"v"}],"examples":{"0":{"input":"x"}}}`,
		`{"teams":[{"key":"k","value":{"input":"y"}}],"notes":[{"value":{"de":"x"}}]}`,
		`{"labels":[{"key":1}],"tags":[[]],"examples":[null]}`, `[]`, `null`, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := profiles.Check(resp.AgentConfigSpecs, data)
		if err == nil && !json.Valid(out) {
			t.Fatalf("Check returned invalid JSON %q", out)
		}
	})
}

package process_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/process"
	"github.com/saap-go/agent/store/natskv"
	"github.com/saap-go/agent/topic"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// natsEnv is an embedded server, a client bus and a KV store.
type natsEnv struct {
	srv   *natsserver.Server
	b     *natsbus.Bus
	store store.Store
}

func newNATS(t *testing.T, dir string) *natsEnv {
	t.Helper()
	srv, err := natsserver.Start(natsserver.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return &natsEnv{srv: srv, b: connect(t, srv.URL()), store: nil}
}

func connect(t *testing.T, url string) *natsbus.Bus {
	t.Helper()
	b, err := natsbus.Connect(natsbus.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func kv(t *testing.T, b *natsbus.Bus) store.Store {
	t.Helper()
	s, err := natskv.New(context.Background(), b.JetStream(), natskv.Config{Bucket: "processtest", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startRunner runs p's runner until the test ends.
func startRunner(t *testing.T, p *process.Process, opts ...process.Option) {
	t.Helper()
	r, err := process.NewRunner(p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	select {
	case <-r.Ready():
	case err := <-done:
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// feed delivers the messages of pattern published from now on.
func feed(t *testing.T, b bus.Bus, pattern string) <-chan *bus.Msg {
	t.Helper()
	ch := make(chan *bus.Msg, 64)
	sub, err := b.Subscribe(context.Background(), pattern, "", func(m *bus.Msg) { ch <- m })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return ch
}

// next waits for the next message of ch whose subject contains part.
func next(t *testing.T, ch <-chan *bus.Msg, part string) *bus.Msg {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-ch:
			if strings.Contains(m.Subject, part) {
				return m
			}
		case <-deadline:
			t.Fatalf("no message with %q within 10 s", part)
			return nil
		}
	}
}

// volatile are the members whose values differ per run: ids and times.
var volatile = map[string]bool{"event_id": true, "created_at": true, "in_response_to": true,
	"process_walkthrough_id": true, "run_id": true, "thread_id": true, "display_id": true}

func normalise(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if volatile[k] && val != nil {
				x[k] = "<" + k + ">"
			} else {
				x[k] = normalise(val)
			}
		}
	case []any:
		for i := range x {
			x[i] = normalise(x[i])
		}
	}
	return v
}

// golden compares a payload with testdata/name after normalising ids and
// times; -update rewrites the file.
func golden(t *testing.T, name string, data []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got := indent(normalise(v))
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var w any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	wantN := indent(normalise(w))
	if !bytes.Equal(got, wantN) {
		t.Errorf("%s differs from the golden file:\ngot  %s\nwant %s", name, got, wantN)
	}
}

// TestInterop runs a walkthrough over NATS in the reference's wire format:
// the start event, the agent's stop event and the human's and program's
// work go in as reference JSON (testdata); the work requests and work
// events that come out are compared with golden payloads.
func TestInterop(t *testing.T) {
	env := newNATS(t, "")
	st := kv(t, env.b)
	startRunner(t, onboardingProcess(), process.WithBus(env.b), process.WithStore(st), process.WithConfigTimeout(time.Second))
	out := feed(t, env.b, "process.Onboarding.>")
	agents := feed(t, env.b, "agent.DocChecker.>")
	ctx := context.Background()

	// The platform starts a walkthrough.
	start := readFile(t, "in-application-start.json")
	walk := "6650f0c2a1b2c3d4e5f60700"
	pub(t, env.b, "process.Onboarding.acme."+walk+".work.Application.6650f0c2a1b2c3d4e5f60701", start)
	next(t, out, ".work.Application.")

	// The runner asks the agent for work.
	req := next(t, out, ".work_request.CheckDocument.")
	pt, err := topic.ParseProcess(req.Subject)
	if err != nil || pt.ID != "acme" || pt.Walkthrough != walk {
		t.Fatalf("work request subject %s: %v", req.Subject, err)
	}
	golden(t, "out-agent-work-request.json", req.Data)

	// The delegator starts the agent's run; the reference agent ends it.
	st0 := next(t, agents, ".control_event.CheckStart.")
	at, _ := topic.ParseAgent(st0.Subject)
	golden(t, "out-agent-start.json", st0.Data)
	at.Name, at.EventID = "CheckStop", "6650f0c2a1b2c3d4e5f60702"
	subj, _ := at.Subject()
	pub(t, env.b, subj, readFile(t, "in-agent-stop.json"))
	aw := next(t, out, ".work.DocumentChecked.")
	golden(t, "out-agent-work-event.json", aw.Data)

	// The human approves over HTTP; only a manager may.
	hreq := next(t, out, ".work_request.ApproveRequest.")
	golden(t, "out-human-work-request.json", hreq.Data)
	checkRules(t, "ApproveRequest", hreq.Data)
	hid, _ := topic.ParseProcess(hreq.Subject)
	// The submission routes are derived from discovery, as a gateway that
	// knows no process code derives them.
	found, err := process.Discover(ctx, env.b, time.Second)
	if err != nil || len(found) != 1 {
		t.Fatalf("discovered %d process classes: %v", len(found), err)
	}
	sub, err := process.NewSubmitterFromDiscovery(env.b, st, found...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sub.Handler(func(r *http.Request) (*event.UserIdentity, error) {
		if r.Header.Get("X-User") == "mia" {
			return manager, nil
		}
		return intern, nil
	}))
	defer srv.Close()
	approval := bytes.ReplaceAll(readFile(t, "in-human-approval.json"), []byte("REQUEST_ID"), []byte(hid.EventID))
	url := srv.URL + "/processes/Onboarding/acme/walkthroughs/" + walk + "/work"
	if code := post(t, url, "ian", approval); code != http.StatusForbidden {
		t.Fatalf("an intern approved: %d", code)
	}
	if code := post(t, url, "mia", approval); code != http.StatusAccepted {
		t.Fatalf("the manager could not approve: %d", code)
	}
	hw := next(t, out, ".work.Approval.")
	golden(t, "out-human-work-event.json", hw.Data)

	// The program creates the account.
	preq := next(t, out, ".work_request.CreateAccount.")
	golden(t, "out-program-work-request.json", preq.Data)
	checkRules(t, "ProgramWorkRequestEvent", preq.Data)
	pid, _ := topic.ParseProcess(preq.Subject)
	pw, err := event.Unmarshal(bytes.ReplaceAll(readFile(t, "in-program-created.json"), []byte("REQUEST_ID"), []byte(pid.EventID)))
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Submit(ctx, "Onboarding", "acme", walk, pw, program); err != nil {
		t.Fatal(err)
	}
	next(t, out, ".work.AccountCreated.")
	stop := next(t, out, ".work.Onboarded.")
	golden(t, "out-process-stop.json", stop.Data)
}

func indent(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	return buf.Bytes()
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pub(t *testing.T, b bus.Bus, subject string, data []byte) {
	t.Helper()
	var id struct {
		EventID string `json:"event_id"`
	}
	_ = json.Unmarshal(data, &id)
	if _, err := b.PublishStream(context.Background(), &bus.Msg{Subject: subject, Data: data}, id.EventID); err != nil {
		t.Fatal(err)
	}
}

func post(t *testing.T, url, user string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("X-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAgentTimeout: an agent that does not finish within its route's
// timeout ends the walkthrough with a ProcessExceptionEvent; its late stop
// changes nothing.
func TestAgentTimeout(t *testing.T) {
	env := newNATS(t, "")
	p := onboardingProcess()
	p.Routes[0] = p.Routes[0].WithTimeout(300 * time.Millisecond)
	st := kv(t, env.b)
	reqs := feed(t, env.b, "process.Onboarding.*.*.work_request.>")
	startRunner(t, p, process.WithBus(env.b), process.WithStore(st),
		process.WithTimeoutTick(50*time.Millisecond), process.WithConfigTimeout(time.Second))
	out := feed(t, env.b, "process.Onboarding.>")
	agents := feed(t, env.b, "agent.DocChecker.*.*.*.*.control_event.CheckStart.*")
	walk := "6650f0c2a1b2c3d4e5f607b0"
	pub(t, env.b, "process.Onboarding.acme."+walk+".work.Application.6650f0c2a1b2c3d4e5f60701",
		readFile(t, "in-application-start.json"))
	next(t, agents, ".CheckStart.")
	exc := next(t, out, ".work.ProcessExceptionEvent.")
	e, err := event.Unmarshal(exc.Data)
	if err != nil {
		t.Fatal(err)
	}
	x := e.(*event.ProcessExceptionEvent)
	if !strings.Contains(x.Message, "did not finish its work within 300ms") || x.HTTPStatusCode != 504 {
		t.Fatalf("timeout event %+v", x)
	}
	// The timeout closed the agent work: a late stop finds it answered.
	req, _ := topic.ParseProcess(next(t, reqs, ".CheckDocument.").Subject)
	got, ok, err := st.Marker(context.Background(), store.RunKey{Class: "process.Onboarding", Run: walk}, "agent_work."+req.EventID)
	if err != nil || !ok || got != "timed_out" {
		t.Fatalf("agent work outcome %q %v %v", got, ok, err)
	}
}

// TestDiscovery: the runner answers process discovery with the work its
// steps take from humans, programs and agents.
func TestDiscovery(t *testing.T) {
	env := newNATS(t, "")
	startRunner(t, onboardingProcess(), process.WithBus(env.b), process.WithStore(kv(t, env.b)))
	subj, err := topic.Discovery{Kind: topic.KindProcess, Class: topic.AnyClass, Dir: topic.DirRequest, CallID: "call1"}.Subject()
	if err != nil {
		t.Fatal(err)
	}
	answers := feed(t, env.b, "class_discovery.process.*.*.response.call1")
	req, _ := event.Marshal(&event.ClassDiscoveryRequestEvent{})
	if err := env.b.Publish(context.Background(), &bus.Msg{Subject: subj, Data: req}); err != nil {
		t.Fatal(err)
	}
	m := next(t, answers, "Onboarding")
	e, err := event.Unmarshal(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	r := e.(*event.ProcessClassDiscoveryResponseEvent)
	names := func(specs ...event.EventSpecs) string {
		var out []string
		for _, s := range specs {
			out = append(out, s.EventName)
		}
		return strings.Join(out, ",")
	}
	var human, program, agent []event.EventSpecs
	for _, in := range r.HumanInputs {
		human = append(human, in.EventSpecs)
	}
	for _, in := range r.ProgramInputs {
		program = append(program, in.EventSpecs)
	}
	for _, in := range r.AgentInputs {
		agent = append(agent, in.EventSpecs)
	}
	if r.ProcessClass != "Onboarding" || names(human...) != "Approval" || names(program...) != "AccountCreated" ||
		names(agent...) != "DocumentChecked" || r.Icon != "mage:broadcast" {
		t.Fatalf("discovery answer %s", m.Data)
	}
}

// TestWorkWithNoProcessIDFromAReferenceDelegator: the reference's
// delegators publish work with "*" as the process id when they set none;
// the runner takes it into the walkthrough its subject names, under that
// walkthrough's process id.
func TestWorkWithNoProcessIDFromAReferenceDelegator(t *testing.T) {
	env := newNATS(t, "")
	startRunner(t, onboardingProcess(), process.WithBus(env.b), process.WithStore(kv(t, env.b)), process.WithConfigTimeout(time.Second))
	out := feed(t, env.b, "process.Onboarding.>")
	agents := feed(t, env.b, "agent.DocChecker.>")
	walk := "6650f0c2a1b2c3d4e5f607c0"
	pub(t, env.b, "process.Onboarding.acme."+walk+".work.Application.6650f0c2a1b2c3d4e5f60701", readFile(t, "in-application-start.json"))
	st0 := next(t, agents, ".control_event.CheckStart.")
	at, _ := topic.ParseAgent(st0.Subject)
	at.Name, at.EventID = "CheckStop", "6650f0c2a1b2c3d4e5f60702"
	subj, _ := at.Subject()
	pub(t, env.b, subj, readFile(t, "in-agent-stop.json"))
	hreq := next(t, out, ".work_request.ApproveRequest.")
	hid, _ := topic.ParseProcess(hreq.Subject)

	approval := bytes.ReplaceAll(readFile(t, "in-human-approval.json"), []byte("REQUEST_ID"), []byte(hid.EventID))
	pub(t, env.b, "process.Onboarding.*."+walk+".work.Approval.6650f0c2a1b2c3d4e5f60703", approval)
	preq := next(t, out, ".work_request.CreateAccount.")
	if pt, _ := topic.ParseProcess(preq.Subject); pt.ID != "acme" || pt.Walkthrough != walk {
		t.Fatalf("the walkthrough went on under %s", preq.Subject)
	}
}

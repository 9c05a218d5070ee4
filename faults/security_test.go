package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// runnerPermissions is the least-privilege NATS permission block of an
// agent runner of class, as docs/security.md lists it: its own agent
// subjects, the JetStream API of its stream, consumer and KV buckets, the
// discovery and config RPC subjects, and its dead letters.
func runnerPermissions(class string) (pub, sub []string) {
	stream := topic.StreamName(class)
	consumer := "agent_runner_" + class
	pub = []string{
		// Its events (outputs, exceptions, display events).
		"agent." + class + ".>",
		// Its stream and the consumers on it.
		"$JS.API.INFO",
		"$JS.API.STREAM.INFO." + stream,
		"$JS.API.STREAM.CREATE." + stream,
		"$JS.API.STREAM.MSG.GET." + stream,
		"$JS.API.DIRECT.GET." + stream + ".>",
		"$JS.API.CONSUMER.INFO." + stream + ".>",
		"$JS.API.CONSUMER.CREATE." + stream + ".>",
		"$JS.API.CONSUMER.DURABLE.CREATE." + stream + "." + consumer,
		"$JS.API.CONSUMER.DELETE." + stream + ".>",
		"$JS.API.CONSUMER.MSG.NEXT." + stream + ".>",
		"$JS.ACK." + stream + ".>",
		// Dead letters.
		"deadletter.agent." + class + ".>",
		"$JS.API.STREAM.INFO.deadletter_stream",
		"$JS.API.STREAM.CREATE.deadletter_stream",
		// Run state in JetStream KV (keys of its own class).
		"$JS.API.STREAM.INFO.KV_saap_state",
		"$JS.API.STREAM.CREATE.KV_saap_state",
		"$JS.API.STREAM.INFO.KV_saap_state_threads",
		"$JS.API.STREAM.CREATE.KV_saap_state_threads",
		"$JS.API.STREAM.PURGE.KV_saap_state",
		"$JS.API.DIRECT.GET.KV_saap_state.$KV.saap_state.r." + class + ".>",
		"$JS.API.DIRECT.GET.KV_saap_state.$KV.saap_state.m." + class + ".>",
		"$JS.API.DIRECT.GET.KV_saap_state_threads.$KV.saap_state_threads.t." + class + ".>",
		"$KV.saap_state.r." + class + ".>",
		"$KV.saap_state.m." + class + ".>",
		"$KV.saap_state_threads.t." + class + ".>",
		// Listing its own keys (pending deadlines): an ordered consumer
		// filtered on them.
		"$JS.API.CONSUMER.CREATE.KV_saap_state.*.$KV.saap_state.r." + class + ".>",
		"$JS.API.CONSUMER.CREATE.KV_saap_state_threads.*.$KV.saap_state_threads.t." + class + ".>",
		"$JS.API.CONSUMER.DELETE.KV_saap_state.*",
		"$JS.API.CONSUMER.DELETE.KV_saap_state_threads.*",

		// Run status records and their thread index (read, written, listed).
		"$JS.API.DIRECT.GET.KV_saap_state.$KV.saap_state.s." + class + ".>",
		"$KV.saap_state.s." + class + ".>",
		"$KV.saap_state.h." + class + ".>",
		"$JS.API.CONSUMER.CREATE.KV_saap_state.*.$KV.saap_state.s." + class + ".>",
		"$JS.API.CONSUMER.CREATE.KV_saap_state.*.$KV.saap_state.h." + class + ".>",
		// Discovery answers and configuration requests.
		"class_discovery.agent." + class + ".*.response.*",
		"class_discovery.agent." + class + ".*.announce.*",
		"aihub.rpc.config.agent." + class + ".*",
	}
	sub = []string{
		"_INBOX.>",
		"class_discovery.agent.*.*.request.*",
		// Run-status requests (answered through allow_responses).
		"aihub.rpc.saap_runs.agent." + class + ".*",
		// Watching its runs' terminal markers as they are written.
		"$KV.saap_state.m." + class + ".*.terminal",
		// Learning that another replica wrote a run's state.
		"$KV.saap_state.m." + class + ".*.dirty",
	}
	return pub, sub
}

// quoteAll renders a NATS configuration list.
func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// TestLeastPrivilegeRunner starts a NATS server whose only user besides the
// test's admin is the runner of one agent class, with the permissions
// docs/security.md documents. The runner works with them (runs complete,
// discovery answers, a bad event is dead-lettered, and the server logs no
// permission violation), and the same credentials cannot reach another
// class's subjects or stream.
func TestLeastPrivilegeRunner(t *testing.T) {
	classA := "SecA_" + event.NewID()[14:]
	classB := "SecB_" + event.NewID()[14:]
	pub, sub := runnerPermissions(classA)
	n, e, _, seedFile := startRestricted(t, classA, pub, sub)

	// Discovery answers under the restricted user.
	answers := make(chan *nats.Msg, 1)
	dsub, err := e.nc.ChanSubscribe("class_discovery.agent."+classA+".*.response.>", answers)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dsub.Unsubscribe() }()
	if err := e.nc.Publish("class_discovery.agent.*.*.request."+event.NewID(), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-answers:
	case <-time.After(waitLong):
		t.Error("agent A did not answer discovery")
	}

	// Runs complete; an undecodable event is dead-lettered.
	for range 5 {
		e.start(e.newRun(), "hello")
	}
	bad := e.newRun()
	bad.Type, bad.Name, bad.EventID = topic.Control, "UserMessageEvent", event.NewID()
	if _, err := e.js.Publish(context.Background(), bad.String(), []byte("not json")); err != nil {
		t.Fatal(err)
	}
	e.expectDead = append(e.expectDead, bad.Run)
	r := e.check(size(45*time.Second, 120*time.Second), "saap-agent "+classA)
	r.log(t, "least-privilege-runner")
	r.assertInvariants(t)
	if r.Completed != 5 {
		t.Errorf("%d of 5 runs of class A completed under its restricted user", r.Completed)
	}
	if len(r.deadletters[bad.Run]) == 0 {
		t.Error("the undecodable event was not dead-lettered under the restricted user")
	}
	if v := violations(n.p.tail(1 << 20)); len(v) > 0 {
		t.Errorf("the server refused agent A's runner %d times, e.g. %s", len(v), v[0])
	}

	// The same credentials cannot reach class B.
	errs := make(chan error, 10)
	nc, err := nats.Connect(n.url, nats.Name("faults-as-A"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		errs <- err
	}), mustNkey(t, seedFile))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	runB := topic.Agent{Class: classB, ID: "x", Thread: event.NewID(), Display: event.NewID(), Run: event.NewID(),
		Type: topic.Control, Name: "UserMessageEvent", EventID: event.NewID()}
	if err := nc.Publish(runB.String(), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	expectViolation(t, errs, "publish", runB.String())
	if _, err := nc.Subscribe("agent."+classB+".>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	expectViolation(t, errs, "subscription", "agent."+classB+".>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: topic.StreamName(classB), Subjects: []string{topic.StreamSubject(classB)}}); err == nil {
		t.Error("agent A's user created class B's stream")
	}
	expectViolation(t, errs, "publish", "$JS.API.STREAM.CREATE."+topic.StreamName(classB))
	// The log check above can fail: the refusals just provoked are there.
	if v := violations(n.p.tail(1 << 20)); len(v) == 0 {
		t.Error("the server log shows no permission violation even for the refused publishes")
	}
}

// startRestricted starts a NATS server whose only users are the test's
// admin and a runner of class limited to pub and sub, and the fault agent
// of class as that runner. It returns the server, the test's environment
// (connected as admin), the agent and the runner's nkey seed file.
func startRestricted(t *testing.T, class string, pub, sub []string) (*natsd, *env, *agentProc, string) {
	t.Helper()
	dir := t.TempDir()
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pubKey, _ := user.PublicKey()
	seed, _ := user.Seed()
	seedFile := filepath.Join(dir, "a.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	adminPass := event.NewID()
	conf := fmt.Sprintf(`authorization {
  users = [
    { user: admin, password: %q }
    { nkey: %q, permissions: { publish: { allow: %s }, subscribe: { allow: %s }, allow_responses: true } }
  ]
}
`, adminPass, pubKey, quoteAll(pub), quoteAll(sub))
	confFile := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNATS(t, natsOpts{config: confFile})
	e := &env{t: t, nats: n, class: class, effects: t.TempDir()}
	e.connect(nats.UserInfo("admin", adminPass))
	a := startAgent(t, "agent-"+class, e.agentEnv("NATS_NKEY_SEED="+seedFile, "FAULT_DISCOVERABLE=1")...)
	return n, e, a, seedFile
}

// A runner whose user may not subscribe to its runs' markers cannot follow
// them: it says so once per marker, reads the terminal marker for every
// event instead, and its runs complete with the same guarantees.
func TestRunnerWithoutMarkerWatch(t *testing.T) {
	class := "SecW_" + event.NewID()[14:]
	pub, sub := runnerPermissions(class)
	watched := func(s string) bool { return strings.HasSuffix(s, ".terminal") || strings.HasSuffix(s, ".dirty") }
	sub = slices.DeleteFunc(sub, watched)
	n, e, a, _ := startRestricted(t, class, pub, sub)
	for range 5 {
		e.start(e.newRun(), "hello")
	}
	r := e.check(size(45*time.Second, 120*time.Second), "saap-agent "+class)
	r.log(t, "runner-without-marker-watch")
	r.assertInvariants(t)
	if r.Completed != 5 {
		t.Errorf("%d of 5 runs completed without the marker watch", r.Completed)
	}
	if out := a.p.tail(1 << 20); !strings.Contains(out, "cannot watch markers") || !strings.Contains(out, "marker=terminal") {
		t.Errorf("the runner did not say it reads the markers per event; its output:\n%s", out)
	}
	for _, v := range violations(n.p.tail(1 << 20)) {
		if !strings.Contains(v, ".terminal") && !strings.Contains(v, ".dirty") {
			t.Errorf("the server refused the runner something else than the marker subscriptions: %s", v)
		}
	}
}

func mustNkey(t *testing.T, seedFile string) nats.Option {
	t.Helper()
	o, err := nats.NkeyOptionFromSeed(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// expectViolation waits for the server's permission error about subject.
func expectViolation(t *testing.T, errs <-chan error, kind, subject string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case err := <-errs:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(strings.ToLower(err.Error()), kind) && strings.Contains(err.Error(), subject) {
				t.Logf("refused as expected: %v", err)
				return
			}
		case <-timeout:
			t.Errorf("no permission violation for %s to %s", kind, subject)
			return
		}
	}
}

// violations returns the server's log lines about permission violations.
func violations(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "Violation") {
			out = append(out, l)
		}
	}
	return out
}

package faults

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// natsCluster is a three-node NATS cluster with JetStream, each node a
// natsd process with its own store, routed to the other two.
type natsCluster struct {
	t     *testing.T
	nodes []*natsd
}

// startCluster starts n clustered nodes and waits until JetStream has a
// meta leader, so that replicated streams can be created.
func startCluster(t *testing.T, n int) *natsCluster {
	t.Helper()
	ports := freePorts(t, n)
	routes := make([]string, n)
	for i, p := range ports {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", p)
	}
	c := &natsCluster{t: t}
	for i := range n {
		c.nodes = append(c.nodes, startNATS(t, natsOpts{
			name: fmt.Sprintf("n%d", i+1), clusterPort: ports[i], routes: strings.Join(routes, ","),
		}))
	}
	nc, js := c.connect()
	defer nc.Close()
	deadline := time.Now().Add(waitLong)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("JetStream of the cluster not ready within %s: %v", waitLong, err)
		}
		time.Sleep(200 * time.Millisecond) // the meta leader election has no event to wait on
	}
}

// freePorts returns n ports that were free a moment ago: the route ports
// must be known before the first node starts.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// urls is every node's client URL, comma-separated.
func (c *natsCluster) urls() string {
	var u []string
	for _, n := range c.nodes {
		u = append(u, n.url)
	}
	return strings.Join(u, ",")
}

// connect opens a client to any node, reconnecting forever.
func (c *natsCluster) connect() (*nats.Conn, jetstream.JetStream) {
	c.t.Helper()
	nc, err := nats.Connect(c.urls(), nats.Name("faults-test"), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		c.t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		c.t.Fatal(err)
	}
	return nc, js
}

// env returns a scenario on the cluster with a fresh class. The checker
// reads the connections of node mon, which must stay up.
func (c *natsCluster) env(mon int) *env {
	c.t.Helper()
	e := &env{t: c.t, nats: c.nodes[mon], class: "Fault_" + event.NewID()[14:], effects: c.t.TempDir()}
	nc, js := c.connect()
	c.t.Cleanup(nc.Close)
	e.nc, e.js = nc, js
	return e
}

// agentOn is the environment of an agent replica that connects to node i
// (it learns the other nodes from it) and creates its streams and buckets
// with three copies.
func (c *natsCluster) agentOn(e *env, i int, extra ...string) []string {
	return e.agentEnv(append([]string{"FAULT_NATS_URL=" + c.nodes[i].url, "FAULT_REPLICAS=3"}, extra...)...)
}

// kill ends the replica with SIGKILL for good: no restart, as when its
// machine is lost.
func (a *agentProc) kill() {
	a.mu.Lock()
	a.stopping = true
	p := a.p
	a.mu.Unlock()
	p.kill()
}

// stops counts the runs of a class that ended (a StopEvent or an
// ExceptionEvent), seen live on the bus, and wakes whoever waits for a
// count.
type stops struct {
	mu    sync.Mutex
	runs  map[string]bool
	first time.Time // the first end
	last  time.Time // the last new run's end
	wake  chan struct{}
}

// watchStops subscribes to the class's terminal events on node i, which must
// stay up: a client that moves to another node misses what is published
// meanwhile.
func (c *natsCluster) watchStops(t *testing.T, e *env, i int) *stops {
	t.Helper()
	nc, err := nats.Connect(c.nodes[i].url, nats.Name("faults-test-stops"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s := &stops{runs: map[string]bool{}, wake: make(chan struct{}, 1)}
	subj := "agent." + e.class + ".*.*.*.*." + string(topic.Control) + ".*.*"
	sub, err := nc.Subscribe(subj, func(m *nats.Msg) {
		tok := strings.Split(m.Subject, ".")
		if tok[7] != "StopEvent" && tok[7] != "ExceptionEvent" {
			return
		}
		s.mu.Lock()
		if !s.runs[tok[5]] {
			s.runs[tok[5]] = true
			s.last = time.Now()
			if s.first.IsZero() {
				s.first = s.last
			}
		}
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return s
}

func (s *stops) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

// waitFor waits until n runs ended, or d passed; it returns the count.
func (s *stops) waitFor(n int, d time.Duration) int {
	deadline := time.After(d)
	for {
		if c := s.count(); c >= n {
			return c
		}
		select {
		case <-s.wake:
		case <-deadline:
			return s.count()
		}
	}
}

// clusterConns checks, on every node in up, that no connection was closed
// for a client's fault, and counts the open connections named name.
func (c *natsCluster) clusterConns(t *testing.T, up []int, name string) (open int, closed []string) {
	t.Helper()
	for _, i := range up {
		n := c.nodes[i]
		cl, err := n.connz("closed")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range cl {
			for _, f := range clientFaults {
				if strings.Contains(x.Reason, f) {
					closed = append(closed, fmt.Sprintf("%s: %q closed: %s", n.o.name, x.Name, x.Reason))
					break
				}
			}
		}
		op, err := n.connz("open")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range op {
			if x.Name == name {
				open++
			}
		}
	}
	return open, closed
}

// TestClusterNodeAndReplicaKilled runs a class on three agent replicas,
// each connected to a different node of a three-node NATS cluster whose
// streams and KV buckets keep three copies. Under load it kills one NATS
// node and one agent replica with SIGKILL, for good. Every run must still
// complete, with no event id stored twice and one Work side effect per
// run: JetStream keeps a quorum of two, the surviving replicas take over
// the dead one's unacknowledged events, and the dead node's clients move to
// the other nodes.
func TestClusterNodeAndReplicaKilled(t *testing.T) {
	runs := size(150, 1000)
	c := startCluster(t, 3)
	e := c.env(2) // node 3 stays up
	// A short AckWait brings the dead replica's events back soon.
	var agents []*agentProc
	for i := range 3 {
		agents = append(agents, startAgent(t, fmt.Sprintf("agent%d", i+1), c.agentOn(e, i, "FAULT_ACK_WAIT=5s")...))
	}
	checkReplicas(t, e, 3)
	st := c.watchStops(t, e, 2)

	began := time.Now()
	nodeAt, agentAt := runs/4, runs/2
	var nodeKilled, agentKilled time.Duration
	kills := func() {
		done := st.count()
		if nodeKilled == 0 && done >= nodeAt {
			c.nodes[0].kill() // agent1's node
			nodeKilled = time.Since(began)
			t.Logf("killed NATS node n1 after %d ended runs", done)
		}
		if agentKilled == 0 && done >= agentAt {
			agents[1].kill() // connected to n2, which stays up
			agentKilled = time.Since(began)
			t.Logf("killed agent2 after %d ended runs", done)
		}
	}
	for range runs {
		e.start(e.newRun(), "hello")
		kills()
	}
	for _, at := range []int{nodeAt, agentAt} {
		if got := st.waitFor(at, waitLong); got < at {
			t.Fatalf("only %d of %d runs ended before the kills", got, runs)
		}
		kills()
	}
	settle := size(3*time.Minute, 10*time.Minute)
	st.waitFor(runs, settle) // for the time taken; the check below counts what is in the stream
	elapsed := time.Since(began)
	r := e.check(settle)
	r.log(t, "cluster-node-and-replica-killed")
	say(t, "cluster-node-and-replica-killed: %d runs in %s (%.1f runs/s), node killed at %s, replica killed at %s",
		runs, elapsed.Round(time.Millisecond), float64(runs)/elapsed.Seconds(), nodeKilled.Round(time.Millisecond), agentKilled.Round(time.Millisecond))
	r.assertInvariants(t)
	if r.Completed != runs {
		t.Errorf("%d of %d runs completed, want all (nothing in them fails)", r.Completed, runs)
	}
	dupEffects := 0
	for run, o := range r.outcome {
		if o == "completed" && r.effects[run] != 1 {
			dupEffects++
			if dupEffects <= 5 {
				t.Errorf("run %s: %d Work side effects, want 1", run, r.effects[run])
			}
		}
	}
	open, closed := c.clusterConns(t, []int{1, 2}, "saap-agent "+e.class)
	say(t, "cluster-node-and-replica-killed: effects_not_once=%d agent_connections_open=%d redelivered=%d",
		dupEffects, open, redelivered(t, e, runs))
	if len(closed) > 0 {
		t.Errorf("connections closed for a client's fault: %v", closed)
	}
	if open < 2 {
		t.Errorf("%d open connections of the class's agents on the surviving nodes, want the two surviving replicas'", open)
	}
	for i, a := range agents {
		if ex := a.exited(); len(ex) > 0 {
			t.Errorf("agent%d exited on its own: %v", i+1, ex)
		}
	}
}

// redelivered is how many deliveries of the class's control events the
// consumer made beyond one per event: the dead replica's events that the
// others took over, and events handed back during the node's failover. A
// completed run of the fault agent holds four control events (the start,
// Begun, Worked and its StopEvent).
func redelivered(t *testing.T, e *env, runs int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := e.js.Consumer(ctx, topic.StreamName(e.class), bus.RunnerConsumer(e.class).Durable)
	if err != nil {
		t.Fatalf("the runner's consumer: %v", err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatalf("the runner's consumer: %v", err)
	}
	return int(info.Delivered.Consumer) - 4*runs
}

// checkReplicas checks that the runner created the class's stream and its
// state buckets with n copies, the buckets read from their leader.
func checkReplicas(t *testing.T, e *env, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{topic.StreamName(e.class), "KV_saap_state", "KV_saap_state_threads"} {
		s, err := e.js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		cfg := s.CachedInfo().Config
		if cfg.Replicas != n {
			t.Fatalf("stream %s has %d replicas, want %d", name, cfg.Replicas, n)
		}
		// A lagging copy answering a read would hand the engine stale
		// state: the buckets must be read from their leader.
		if strings.HasPrefix(name, "KV_") && cfg.AllowDirect {
			t.Fatalf("bucket stream %s lets every copy answer reads", name)
		}
	}
}

// TestClusterThroughput measures completed runs per second of the fault
// agent (three steps a run, JetStream KV state) with one, two and three
// agent replicas on a three-node cluster with three copies of everything,
// each replica on its own node, and the CPU time the servers and the agents
// used. The baseline, same run: one replica on a single server with one
// copy. Then one and three replicas with the run state in Redis (REDIS_URL,
// or a redis-server the test starts) instead of KV. Long mode only:
//
//	go test ./faults -run TestClusterThroughput -v -faults.long
func TestClusterThroughput(t *testing.T) {
	if !*long {
		t.Skip("a measurement, not a check: run it with -faults.long")
	}
	const runs = 400

	single := startNATS(t, natsOpts{})
	sc := &natsCluster{t: t, nodes: []*natsd{single}}
	e := sc.env(0)
	a := startAgent(t, "single", sc.agentOn(e, 0, "FAULT_REPLICAS=1", "FAULT_ACK_WAIT=30s")...)
	measure(t, sc, e, []*agentProc{a}, runs, "single-server R1")
	a.stop()
	single.kill()

	c := startCluster(t, 3)
	for n := 1; n <= 3; n++ {
		e := c.env(0)
		var agents []*agentProc
		for i := range n {
			agents = append(agents, startAgent(t, fmt.Sprintf("agent%d", i+1), c.agentOn(e, i, "FAULT_ACK_WAIT=30s")...))
		}
		measure(t, c, e, agents, runs, "cluster R3")
		for _, a := range agents {
			a.stop()
		}
	}

	// The same with the run state in Redis (one server, no copies): what
	// the KV store's replicated writes cost.
	_, ru := redisUpstream(t)
	for _, n := range []int{1, 3} {
		e := c.env(0)
		var agents []*agentProc
		for i := range n {
			agents = append(agents, startAgent(t, fmt.Sprintf("redis-agent%d", i+1),
				c.agentOn(e, i, "FAULT_ACK_WAIT=30s", "FAULT_REDIS_URL="+ru.String())...))
		}
		measure(t, c, e, agents, runs, "cluster R3, Redis state")
		for _, a := range agents {
			a.stop()
		}
	}
}

// measure starts runs runs of e's class, waits until all stopped, and
// prints the rate and the CPU time used meanwhile.
func measure(t *testing.T, c *natsCluster, e *env, agents []*agentProc, runs int, what string) {
	t.Helper()
	st := c.watchStops(t, e, 0)
	cpu0 := c.cpu(agents)
	began := time.Now()
	for range runs {
		e.start(e.newRun(), "hello")
	}
	got := st.waitFor(runs, 2*time.Minute)
	elapsed := time.Since(began)
	cpu := c.cpu(agents).sub(cpu0)
	// A rate counts only if every run completed, each once.
	r := e.check(10 * time.Second)
	r.assertInvariants(t)
	if got < runs || r.Completed != runs {
		r.log(t, "cluster-throughput")
		t.Fatalf("%s, %d replicas: %d of %d runs completed", what, len(agents), r.Completed, runs)
	}
	say(t, "cluster-throughput: %s replicas=%d runs=%d elapsed=%s runs_per_s=%.1f cpu_nats=%s cpu_agents=%s cpu_per_run=%s load=%s cores=%d",
		what, len(agents), runs, elapsed.Round(time.Millisecond), float64(runs)/elapsed.Seconds(),
		cpu.nats.Round(time.Millisecond), cpu.agents.Round(time.Millisecond),
		((cpu.nats + cpu.agents) / time.Duration(runs)).Round(time.Microsecond), loadavg(), runtime.NumCPU())
}

// say logs a result line and, with -v, prints it on stdout too, as
// report.log does.
func say(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	if testing.Verbose() {
		fmt.Println(line)
	}
}

// cpuUse is CPU time used by the cluster's servers and by the agents.
type cpuUse struct{ nats, agents time.Duration }

func (u cpuUse) sub(v cpuUse) cpuUse { return cpuUse{u.nats - v.nats, u.agents - v.agents} }

// cpu reads the user and system time of the nodes and agents from /proc
// (zero where it cannot).
func (c *natsCluster) cpu(agents []*agentProc) cpuUse {
	var u cpuUse
	for _, n := range c.nodes {
		u.nats += procCPU(n.p.cmd.Process.Pid)
	}
	for _, a := range agents {
		a.mu.Lock()
		p := a.p
		a.mu.Unlock()
		u.agents += procCPU(p.cmd.Process.Pid)
	}
	return u
}

// procCPU is a process's user plus system time, from /proc/<pid>/stat in
// clock ticks of 1/100 s.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // the command name may hold spaces
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// loadavg is the one-minute load average, or "?".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

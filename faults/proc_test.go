package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var long = flag.Bool("faults.long", false, "run the fault scenarios with their full numbers (200 runs, a 60 s outage)")

// size returns the short or the long number.
func size[T any](short, full T) T {
	if *long {
		return full
	}
	return short
}

// waitLong bounds a wait for a process or a run: generous, since the
// machine may be shared.
const waitLong = 90 * time.Second

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
	skipMsg   string
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// bins builds the helper commands once per test binary and returns the
// directory that holds natsd, faultagent and saap-gateway. It skips the
// test with -short or without the go command.
func bins(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("the fault suite starts server and agent processes; skipped with -short")
	}
	buildOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			skipMsg = "the fault suite builds its helper binaries with the go command, which is not on PATH"
			return
		}
		binDir, buildErr = os.MkdirTemp("", "saap-faults-bin-*")
		if buildErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goBin, "build", "-o", binDir+string(filepath.Separator),
			"./internal/cmd/natsd", "./internal/cmd/faultagent", "../gateway/cmd/saap-gateway")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if skipMsg != "" {
		t.Skip(skipMsg)
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// proc is a helper process whose output is kept and shown if the test
// fails. It is killed when the test ends.
type proc struct {
	name  string
	cmd   *exec.Cmd
	ready chan string // the ready line, once
	done  chan struct{}
	err   error // set before done is closed

	mu  sync.Mutex
	out bytes.Buffer
}

// startProc starts bin; a stdout line containing ready says it is ready.
// The process is killed when the test ends, and its output shown if the
// test failed.
func startProc(t *testing.T, name, ready string, env []string, bin string, args ...string) *proc {
	t.Helper()
	p, err := newProc(name, ready, env, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("output of %s (last 4 KiB):\n%s", name, p.tail(4096))
		}
	})
	return p
}

// newProc starts bin; the caller kills it.
func newProc(name, ready string, env []string, bin string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	p := &proc{name: name, cmd: cmd, ready: make(chan string, 1), done: make(chan struct{})}
	cmd.Stderr = writerFunc(p.write)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			if !signalled && strings.Contains(line, ready) {
				signalled = true
				p.ready <- line
			}
			p.write([]byte(line + "\n"))
		}
		_, _ = io.Copy(io.Discard, stdout)
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.out.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// waitReady returns the ready line, or fails the test if the process
// exits first or takes longer than waitLong.
func (p *proc) waitReady(t *testing.T) string {
	t.Helper()
	select {
	case l := <-p.ready:
		return l
	case <-p.done:
		t.Fatalf("%s exited before it was ready: %v\n%s", p.name, p.err, p.tail(4096))
	case <-time.After(waitLong):
		t.Fatalf("%s not ready within %s\n%s", p.name, waitLong, p.tail(4096))
	}
	return ""
}

// kill sends SIGKILL and waits until the process is gone.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM and waits up to d; then it kills.
func (p *proc) stop(d time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		p.kill()
		return fmt.Errorf("%s did not stop within %s; killed", p.name, d)
	}
}

// exitCode is the process's exit status (-1 when killed by a signal).
func (p *proc) exitCode() int {
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// natsOpts configure a natsd process.
type natsOpts struct {
	maxPayload     int
	maxControlLine int
	config         string // configuration file (users and permissions)
	// name, clusterPort and routes make the server a cluster node.
	name        string
	clusterPort int
	routes      string
}

// natsd is a nats-server process with a file store that survives kills.
type natsd struct {
	t        *testing.T
	bin      string
	dir      string
	o        natsOpts
	port     string
	httpPort string
	url      string // client URL
	mon      string // monitoring URL
	p        *proc
	starts   int
}

func startNATS(t *testing.T, o natsOpts) *natsd {
	t.Helper()
	n := &natsd{t: t, bin: filepath.Join(bins(t), "natsd"), dir: t.TempDir(), o: o, port: "-1", httpPort: "-1"}
	n.start()
	u, err := url.Parse(n.url)
	if err != nil {
		t.Fatal(err)
	}
	m, err := url.Parse(n.mon)
	if err != nil {
		t.Fatal(err)
	}
	n.port, n.httpPort = u.Port(), m.Port() // restarts reuse them
	return n
}

func (n *natsd) start() {
	n.t.Helper()
	args := []string{"-dir", n.dir, "-port", n.port, "-http_port", n.httpPort}
	if n.o.maxPayload > 0 {
		args = append(args, "-max_payload", fmt.Sprint(n.o.maxPayload))
	}
	if n.o.maxControlLine > 0 {
		args = append(args, "-max_control_line", fmt.Sprint(n.o.maxControlLine))
	}
	if n.o.config != "" {
		args = append(args, "-config", n.o.config, "-log")
	}
	if n.o.clusterPort != 0 {
		args = append(args, "-name", n.o.name, "-cluster_port", fmt.Sprint(n.o.clusterPort), "-routes", n.o.routes)
	}
	n.starts++
	label := "natsd"
	if n.o.name != "" {
		label = n.o.name
	}
	n.p = startProc(n.t, fmt.Sprintf("%s#%d", label, n.starts), "NATSD_READY", nil, n.bin, args...)
	f := strings.Fields(n.p.waitReady(n.t))
	if len(f) != 3 {
		n.t.Fatalf("natsd ready line %q", f)
	}
	n.url, n.mon = f[1], f[2]
}

// kill SIGKILLs the server.
func (n *natsd) kill() { n.p.kill() }

// restart starts the server again on the same ports and store directory.
func (n *natsd) restart() { n.start() }

// conn is one entry of the server's /connz.
type conn struct {
	CID    uint64 `json:"cid"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// connz lists the server's open or closed client connections.
func (n *natsd) connz(state string) ([]conn, error) {
	resp, err := http.Get(n.mon + "/connz?limit=100000&state=" + state)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var v struct {
		Connections []conn `json:"connections"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return nil, fmt.Errorf("connz: %w", err)
	}
	return v.Connections, nil
}

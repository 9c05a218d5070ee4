// Package crashtest runs parts of a test in child processes that the test can
// kill with SIGKILL, to check what survives a real crash.
//
// The test binary re-executes itself with an environment variable naming a
// helper mode; TestMain hands control to the helper before any test runs:
//
//	func TestMain(m *testing.M) {
//		crashtest.Main(map[string]func() int{"replica": runReplica})
//		os.Exit(m.Run())
//	}
//
// A helper signals readiness by calling Ready (one line on stdout), so the
// parent waits on an event instead of sleeping.
package crashtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvMode is the environment variable that selects a helper mode in the
// child process.
const EnvMode = "SAAP_CRASHTEST_MODE"

const readyLine = "SAAP_CRASHTEST_READY"

// Main runs the helper selected by EnvMode, if any, and exits with its
// status. Without EnvMode it returns at once, and TestMain goes on to run the
// tests. An unknown mode exits with status 3.
func Main(modes map[string]func() int) {
	mode := os.Getenv(EnvMode)
	if mode == "" {
		return
	}
	f, ok := modes[mode]
	if !ok {
		fmt.Fprintf(os.Stderr, "crashtest: unknown mode %q\n", mode)
		os.Exit(3)
	}
	os.Exit(f())
}

// Ready tells the parent that the helper is ready. Call it once.
func Ready() {
	fmt.Fprintln(os.Stdout, readyLine)
}

// Child is a helper process.
type Child struct {
	Name string

	t     testing.TB
	cmd   *exec.Cmd
	ready chan struct{}
	done  chan struct{}
	err   error // set before done is closed

	mu  sync.Mutex
	out strings.Builder
}

// Start starts the test binary as a helper in mode, with extra environment
// variables ("K=V"). The child is killed when the test ends, if it still
// runs. Its output is logged if the test fails.
func Start(t testing.TB, name, mode string, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), EnvMode+"="+mode), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("crashtest: %v", err)
	}
	c := &Child{Name: name, t: t, cmd: cmd, ready: make(chan struct{}), done: make(chan struct{})}
	cmd.Stderr = writerFunc(c.write)
	if err := cmd.Start(); err != nil {
		t.Fatalf("crashtest: start %s: %v", name, err)
	}
	var copied sync.WaitGroup
	copied.Add(1)
	go func() {
		defer copied.Done()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			if !signalled && line == readyLine {
				signalled = true
				close(c.ready)
				continue
			}
			c.write([]byte(line + "\n"))
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		copied.Wait() // Wait closes the pipe: read it to the end first
		c.err = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.Kill()
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, c.Output())
		}
	})
	return c
}

func (c *Child) write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}

// Output returns what the child wrote so far (stderr and stdout).
func (c *Child) Output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// WaitReady waits until the child called Ready. It fails the test if the
// child exits first or ctx ends.
func (c *Child) WaitReady(ctx context.Context) {
	c.t.Helper()
	select {
	case <-c.ready:
	case <-c.done:
		c.t.Fatalf("crashtest: %s exited before it was ready: %v\n%s", c.Name, c.err, c.Output())
	case <-ctx.Done():
		c.t.Fatalf("crashtest: %s not ready: %v\n%s", c.Name, ctx.Err(), c.Output())
	}
}

// Kill sends SIGKILL and waits for the process to be gone. Killing an exited
// child does nothing.
func (c *Child) Kill() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// Stop asks the child to shut down gracefully (SIGTERM) and waits at most d
// for it to exit; then it kills it. It returns the exit error, if any.
func (c *Child) Stop(d time.Duration) error {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return c.err
	case <-time.After(d):
		c.Kill()
		return errors.New("crashtest: " + c.Name + " did not stop in time; killed")
	}
}

// Done is closed when the child has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

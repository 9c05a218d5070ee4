// Package exectest builds a command of this module and runs it as a
// process, for the tests of the examples and of gateway/cmd/saap-gateway:
// Build compiles the package under test, Run runs it to its exit, Start
// runs it in the background and WaitLine waits for a line of its output
// (an event, not a sleep).
package exectest

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Build compiles the main package in the current directory into
// t.TempDir() and returns the binary's path; the binary is named after the
// directory.
func Build(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), filepath.Base(wd))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// Env is the child's environment: the test's, without variables that
// would change an example's behaviour (a real model), plus extra, whose
// values win over the test's.
func Env(extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OPENAI_")
	})
	return append(env, extra...)
}

// Run runs bin with args until it exits or timeout passes, and returns its
// stdout, stderr and exit error.
func Run(t *testing.T, bin string, timeout time.Duration, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v did not exit within %s\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), args, timeout, out.String(), errb.String())
	}
	return out.String(), errb.String(), err
}

// Process is a running command.
type Process struct {
	Cmd    *exec.Cmd
	lines  chan string
	mu     sync.Mutex
	stdout strings.Builder
	stderr bytes.Buffer
	exited chan struct{}
	err    error // set before exited is closed
}

// Start starts bin with args; it is killed when t ends if still running.
func Start(t *testing.T, bin string, env []string, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	p := &Process{Cmd: cmd, lines: make(chan string, 1000), exited: make(chan struct{})}
	cmd.Stderr = &p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		_, _ = io.Copy(io.Discard, out)
		close(p.lines)
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// WaitLine returns the first line of stdout that contains substr.
func (p *Process) WaitLine(t *testing.T, substr string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				<-p.exited
				t.Fatalf("stdout ended without %q (exit: %v)\nstdout:\n%s\nstderr:\n%s", substr, p.err, p.Stdout(), p.stderr.String())
			}
			if strings.Contains(l, substr) {
				return l
			}
		case <-deadline:
			t.Fatalf("no line with %q within %s\nstdout:\n%s", substr, timeout, p.Stdout())
		}
	}
}

// Signal sends sig to the process.
func (p *Process) Signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// Wait waits for the process to exit and returns its exit error.
func (p *Process) Wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("process did not exit within %s\nstdout:\n%s", timeout, p.Stdout())
		return nil
	}
}

// Stdout is what the process printed so far.
func (p *Process) Stdout() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String()
}

// Stderr is what the process wrote to stderr; it waits for the exit.
func (p *Process) Stderr() string {
	<-p.exited
	return p.stderr.String()
}

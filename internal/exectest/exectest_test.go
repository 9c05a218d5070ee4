package exectest_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/exectest"
)

func TestRunAndStart(t *testing.T) {
	t.Chdir(filepath.Join("testdata", "waiter"))
	bin := exectest.Build(t)
	if filepath.Base(bin) != "waiter" {
		t.Errorf("binary %s is not named after its directory", bin)
	}

	t.Setenv("OPENAI_API_KEY", "must-not-leak")
	env := exectest.Env("EXECTEST_VAR=set")
	for _, kv := range env {
		if strings.HasPrefix(kv, "OPENAI_") {
			t.Errorf("Env kept %s", kv)
		}
	}

	_, stderr, err := exectest.Run(t, bin, time.Minute, env, "-fail")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(stderr, "EXECTEST_VAR=set") {
		t.Errorf("Run -fail: err %v, stderr %q", err, stderr)
	}

	p := exectest.Start(t, bin, env, "a", "b")
	if l := p.WaitLine(t, "args:", time.Minute); l != "args: a b" {
		t.Errorf("args line %q", l)
	}
	p.WaitLine(t, "ready", time.Minute)
	p.Signal(t, syscall.SIGTERM)
	if err := p.Wait(t, time.Minute); err != nil {
		t.Errorf("exit after SIGTERM: %v (stderr %q)", err, p.Stderr())
	}
	if !strings.HasSuffix(p.Stdout(), "bye\n") {
		t.Errorf("stdout %q", p.Stdout())
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/saap-go/agent/topic"
)

func cmdReplay(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "replay", "replay [-class C] [-test REGEXP] [-save] RUN -pkg ./path/to/agent", `  saap replay 0123456789abcdef01234567 -pkg ./agents/chat
  saap replay -save 0123456789abcdef01234567 -pkg ./agents/chat   # keep it as a regression test

The package needs a replay test, one line with agenttest:
  func TestReplay(t *testing.T) { agenttest.ReplayRecordings(t, workflow(t)) }
saap records the run, runs that test with SAAP_REPLAY naming the recording,
and shows the go-cmp diff of the outputs when the current code differs.
`)
	class := fs.String("class", "", "the run's agent class (default: search every agent stream)")
	pkg := fs.String("pkg", "", "the Go package holding the agent and its replay test (required)")
	test := fs.String("test", "Replay", "the go test -run pattern of the replay test")
	save := fs.Bool("save", false, "keep the recording in the package's testdata/recordings/RUN.json")
	var pos []string
	for {
		if err := parse(e, fs, args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: want one RUN id", errUsage)
	}
	if *pkg == "" {
		return fmt.Errorf("%w: -pkg is required (the package holding the agent)", errUsage)
	}
	run := pos[0]
	if err := topic.ValidateToken("run_id", run); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	dir := *pkg
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("-pkg %s: not a directory", dir)
	}

	b, err := e.connect()
	if err != nil {
		return err
	}
	classes, err := classesOf(ctx, b, *class)
	if err != nil {
		b.Close()
		return err
	}
	found, evs, err := runEvents(ctx, b, run, classes)
	b.Close()
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(recording{Class: found, Run: run, Events: evs}, "", "  ")
	if err != nil {
		return err
	}
	var file string
	if *save {
		file = filepath.Join(dir, "testdata", "recordings", run+".json")
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
	} else {
		tmp, err := os.MkdirTemp("", "saap-replay-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		file = filepath.Join(tmp, run+".json")
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return err
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	if *save {
		fmt.Fprintf(e.stderr, "saved %s\n", file)
	}
	fmt.Fprintf(e.stderr, "replaying run %s of %s (%d events) against %s …\n", run, found, len(evs), dir)
	// go test takes a directory as a relative path only with a leading dot.
	target := filepath.Clean(dir)
	if !filepath.IsAbs(target) && !strings.HasPrefix(target, ".") {
		target = "." + string(filepath.Separator) + target
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-run", *test, "-v", target)
	cmd.Env = append(os.Environ(), "SAAP_REPLAY="+abs)
	done := e.waiting("go test -run %s %s", *test, target)
	out, err := cmd.CombinedOutput()
	done()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return fmt.Errorf("go test: %w", err)
	}
	text := string(out)
	switch {
	case err == nil && strings.Contains(text, "--- SKIP"):
		return fmt.Errorf("the package's replay test skipped:\n%s", text)
	case err == nil && !strings.Contains(text, "--- PASS"):
		return fmt.Errorf("no test matching %q in %s: add one (see saap replay -h)", *test, dir)
	case err == nil:
		fmt.Fprintf(e.stdout, "run %s replays clean against %s\n", run, dir)
		return nil
	}
	fmt.Fprint(e.stdout, text)
	return fmt.Errorf("the replay of run %s differs from the recording (diff above: -recorded +replayed)", run)
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The binaries under test, built once, and the dev-mode agents they talk
// to, each started once.
var (
	binDir  string
	devMu   sync.Mutex
	servers = map[string]*devProc{}
)

type devProc struct {
	cmd            *exec.Cmd
	natsURL, gwURL string
	err            error
}

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "saap-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	for _, p := range servers {
		if p.cmd != nil && p.cmd.Process != nil {
			_ = p.cmd.Process.Signal(os.Interrupt)
			_ = p.cmd.Wait()
		}
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func build(t *testing.T, name, pkg string) string {
	t.Helper()
	out := filepath.Join(binDir, name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// devServer starts internal/cmd/devecho (the Echo agent in dev mode on an
// embedded NATS server) once for all tests and returns its NATS URL and
// gateway URL, read from the banner it prints.
func devServer(t *testing.T) (string, string) {
	t.Helper()
	return devAgent(t, "devecho", "github.com/saap-go/agent/internal/cmd/devecho")
}

// devAgent starts the dev-mode command pkg once for all tests.
func devAgent(t *testing.T, name, pkg string) (string, string) {
	t.Helper()
	bin := build(t, name, pkg)
	devMu.Lock()
	defer devMu.Unlock()
	p := servers[name]
	if p == nil {
		p = startDev(bin)
		servers[name] = p
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.natsURL, p.gwURL
}

func startDev(bin string) *devProc {
	p := &devProc{cmd: exec.Command(bin, "-addr", "127.0.0.1:0")}
	p.cmd.Env = envWithout("NATS_URL", "REDIS_URL")
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		p.err = err
		return p
	}
	if p.err = p.cmd.Start(); p.err != nil {
		return p
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 2 && f[0] == "NATS":
			p.natsURL = f[1]
		case len(f) >= 2 && f[0] == "gateway":
			p.gwURL = f[1]
		case len(f) >= 1 && f[0] == "try":
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return p
		}
	}
	p.err = fmt.Errorf("%s ended before its banner: %v", bin, sc.Err())
	return p
}

func envWithout(names ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || k == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

type result struct {
	stdout, stderr string
	code           int
}

// saap runs the command with NATS_URL set to natsURL ("" for none).
func saap(t *testing.T, natsURL, stdin string, args ...string) result {
	t.Helper()
	return saapEnv(t, nil, natsURL, stdin, args...)
}

// saapEnv is saap with more environment variables.
func saapEnv(t *testing.T, extra []string, natsURL, stdin string, args ...string) result {
	t.Helper()
	bin := build(t, "saap", "github.com/saap-go/agent/cmd/saap")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(envWithout("NATS_URL", "NO_COLOR"), "NATS_URL="+natsURL), extra...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b[0-9a-f]{24}\b`), "<id>"},
	{regexp.MustCompile(`\b\d\d:\d\d:\d\d\.\d{3}\b`), "<time>"},
	{regexp.MustCompile(`\b\d+ms\b`), "<ms>"},
	{regexp.MustCompile(`\+<ms>`), "+<ms>"},
	{regexp.MustCompile(`"created_at":\d+`), `"created_at":<ns>`},
	{regexp.MustCompile(`"time":"[^"]+"`), `"time":"<time>"`},
	{regexp.MustCompile(`(?m)^saap \S+( [0-9a-f]{12})? go\S+ \S+/\S+$`), "saap <version> <go> <os>/<arch>"},
}

func mask(s string) string {
	for _, m := range masks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	// Column padding after a masked duration varies with its width.
	return regexp.MustCompile(` +\+<ms>`).ReplaceAllString(s, " +<ms>")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	got = mask(got)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

func ok(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestAgents(t *testing.T) {
	nats, _ := devServer(t)
	r := saap(t, nats, "", "agents", "-wait", "500ms")
	ok(t, r)
	golden(t, "agents", r.stdout)

	r = saap(t, "", "", "-nats", nats, "agents", "-json", "-wait", "500ms")
	ok(t, r)
	var classes []struct {
		Class string `json:"agent_class"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &classes); err != nil || len(classes) != 1 || classes[0].Class != "EchoAgent" {
		t.Errorf("agents -json: %v %s", err, r.stdout)
	}
}

func TestChat(t *testing.T) {
	nats, _ := devServer(t)
	r := saap(t, nats, "", "chat", "EchoAgent", "hi", "  there")
	ok(t, r)
	golden(t, "chat", r.stdout)

	// A thought on a line of its own, before the chunks.
	r = saap(t, nats, "", "chat", "EchoAgent", "think hard")
	ok(t, r)
	golden(t, "chat-think", r.stdout)

	// The agent asks a question; the answer comes from standard input.
	r = saap(t, nats, "Ada\n", "chat", "EchoAgent/t", "ask me")
	ok(t, r)
	golden(t, "chat-hitl", r.stdout)

	// A conversation: one message a line.
	r = saap(t, nats, "one\ntwo\n", "chat", "EchoAgent")
	ok(t, r)
	golden(t, "chat-interactive", r.stdout)
}

func TestTail(t *testing.T) {
	nats, _ := devServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tail := exec.CommandContext(ctx, build(t, "saap", "github.com/saap-go/agent/cmd/saap"), "tail", "-class", "EchoAgent", "-n", "7")
	tail.Env = append(envWithout("NATS_URL"), "NATS_URL="+nats)
	var out bytes.Buffer
	tail.Stdout = &out
	stderr, _ := tail.StderrPipe()
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	// The subscription is open once tail says what it follows.
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "following agent.EchoAgent.") {
		t.Fatalf("tail said %q, %v", line, err)
	}
	ok(t, saap(t, nats, "", "chat", "EchoAgent/tail", "hello world"))
	if err := tail.Wait(); err != nil {
		t.Fatal(err)
	}
	golden(t, "tail", out.String())
}

func TestRunShowAndGraph(t *testing.T) {
	nats, gw := devServer(t)
	resp, err := http.Post(gw+"/agents/EchoAgent/show/UserMessageEvent", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"show me"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	run := resp.Header.Get("X-Run-Id")
	if resp.StatusCode != 200 || run == "" {
		t.Fatalf("POST: %s, run %q", resp.Status, run)
	}
	r := saap(t, nats, "", "run", "show", run)
	ok(t, r)
	golden(t, "run-show", r.stdout)

	r = saap(t, nats, "", "run", "show", "-class", "EchoAgent", "-json", run)
	ok(t, r)
	var rec struct {
		Class  string `json:"agent_class"`
		Events []struct {
			Name string `json:"event_name"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil || rec.Class != "EchoAgent" || len(rec.Events) != 8 || rec.Events[0].Name != "UserMessageEvent" {
		t.Errorf("run show -json: %v %+v", err, rec)
	}

	r = saap(t, nats, "", "run", "graph", "EchoAgent")
	ok(t, r)
	golden(t, "graph-mermaid", r.stdout)
	r = saap(t, nats, "", "run", "graph", "-format", "dot", "EchoAgent")
	ok(t, r)
	golden(t, "graph-dot", r.stdout)
}

func TestReplay(t *testing.T) {
	nats, gw := devServer(t)
	resp, err := http.Post(gw+"/agents/EchoAgent/replay/UserMessageEvent", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"replay me"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	run := resp.Header.Get("X-Run-Id")
	pkg := "../../internal/devdemo"

	// The same code: a clean replay.
	r := saap(t, nats, "", "replay", run, "-pkg", pkg)
	ok(t, r)
	golden(t, "replay-clean", r.stdout)

	// A changed reply (the agent's test reads DEVDEMO_PREFIX): the diff,
	// and exit status 1.
	r = saapEnv(t, []string{"DEVDEMO_PREFIX=v2:"}, nats, "", "replay", run, "-pkg", pkg)
	if r.code != 1 || !strings.Contains(r.stderr, "differs from the recording") {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	for _, want := range []string{`-`, `string("You said: replay me")`, `+`, `string("v2: You said: replay me")`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the replay's output lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestExitCodesAndHelp(t *testing.T) {
	nats, _ := devServer(t)
	for _, c := range []struct {
		name   string
		nats   string
		args   []string
		code   int
		stderr string
		stdout string // asked-for help goes to stdout, and stderr stays empty
	}{
		{"no command", nats, nil, 2, "Commands:", ""},
		{"unknown command", nats, []string{"frobnicate"}, 2, `unknown command "frobnicate"`, ""},
		{"help", nats, []string{"-h"}, 0, "", "Examples:"},
		{"--help", nats, []string{"--help"}, 0, "", "Examples:"},
		{"help command", nats, []string{"help"}, 0, "", "Commands:"},
		{"help tail", nats, []string{"help", "tail"}, 0, "", "saap tail -class EchoAgent"},
		{"help run list", nats, []string{"help", "run", "list"}, 0, "", "-state"},
		{"command help", nats, []string{"tail", "-h"}, 0, "", "saap tail -class EchoAgent"},
		{"run help", nats, []string{"run", "-h"}, 0, "", "saap run list"},
		{"bad top flag", nats, []string{"-nope"}, 2, "flag provided but not defined: -nope", ""},
		{"bad flag", nats, []string{"agents", "-nope"}, 2, "flag provided but not defined: -nope", ""},
		{"bad run id", nats, []string{"run", "show", "no.dots"}, 2, "run_id", ""},
		{"run subcommand", nats, []string{"run", "walk"}, 2, `unknown run subcommand "walk"`, ""},
		{"graph format", nats, []string{"run", "graph", "-format", "png", "EchoAgent"}, 2, "want mermaid or dot", ""},
		{"no server", "", []string{"agents"}, 1, "no NATS server: set NATS_URL", ""},
		{"unknown class", nats, []string{"chat", "Nope", "hi"}, 1, "agent class Nope is unknown on this server", ""},
		{"unknown graph class", nats, []string{"run", "graph", "Nope"}, 1, "known classes: EchoAgent", ""},
		{"replay without pkg", nats, []string{"replay", "ffffffffffffffffffffffff"}, 2, "-pkg is required", ""},
		{"replay bad pkg", nats, []string{"replay", "ffffffffffffffffffffffff", "-pkg", "/nonexistent"}, 1, "not a directory", ""},
		{"unknown run", nats, []string{"run", "show", "-wait", "100ms", "ffffffffffffffffffffffff"}, 1, "no events in the streams of EchoAgent", ""},
		{"run list state", nats, []string{"run", "list", "-state", "done"}, 2, `-state "done"`, ""},
		{"completion shell", nats, []string{"completion", "tcsh"}, 2, `no completion for shell "tcsh"`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := saap(t, c.nats, "", c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.stderr) || !strings.Contains(r.stdout, c.stdout) {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit %d, %q and %q", r.code, r.stderr, r.stdout, c.code, c.stderr, c.stdout)
			}
			if c.stdout != "" && r.stderr != "" {
				t.Errorf("help wrote to stderr: %q", r.stderr)
			}
		})
	}
}

// An unknown class fails without waiting for a discovery window, and
// agents returns once the classes with a stream answered.
func TestFailFastAndAgentsReturnEarly(t *testing.T) {
	nats, _ := devServer(t)
	for _, args := range [][]string{
		{"chat", "-wait", "30s", "Nope", "hi"},
		{"run", "graph", "-wait", "30s", "Nope"},
		{"agents", "-wait", "30s"},
	} {
		start := time.Now()
		r := saap(t, nats, "", args...)
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("saap %s took %s: it waited for the window", strings.Join(args, " "), took)
		}
		if args[0] == "agents" {
			ok(t, r)
			golden(t, "agents", r.stdout)
		} else if r.code != 1 {
			t.Errorf("saap %s: exit %d", strings.Join(args, " "), r.code)
		}
	}
}

func TestVersion(t *testing.T) {
	r := saap(t, "", "", "version")
	ok(t, r)
	golden(t, "version", r.stdout)
	for _, flag := range []string{"--version", "-version"} {
		if v := saap(t, "", "", flag); v.code != 0 || v.stdout != r.stdout {
			t.Errorf("saap %s: exit %d, %q; want %q", flag, v.code, v.stdout, r.stdout)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := saap(t, "", "", "completion", sh)
		ok(t, r)
		golden(t, "completion-"+sh, r.stdout)
		// The shell parses the script, where it is installed.
		if path, err := exec.LookPath(sh); err == nil {
			cmd := exec.Command(path, "-n")
			cmd.Stdin = strings.NewReader(r.stdout)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", sh, err, out)
			}
		}
	}
}

// The scripts complete each command's flags: the list they are made of
// agrees with the flags the commands define.
func TestCompletionFlags(t *testing.T) {
	flagLine := regexp.MustCompile(`(?m)^  (-\w+)`)
	for cmd, want := range commandFlags {
		var out bytes.Buffer
		e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: io.Discard}
		if code := run(context.Background(), append(strings.Fields(cmd), "-h"), e); code != 0 {
			t.Fatalf("saap %s -h: exit %d", cmd, code)
		}
		var got []string
		for _, m := range flagLine.FindAllStringSubmatch(out.String(), -1) {
			got = append(got, m[1])
		}
		slices.Sort(got)
		want = slices.Sorted(slices.Values(want))
		if !slices.Equal(got, want) {
			t.Errorf("saap %s defines %v; the completion lists %v", cmd, got, want)
		}
	}
}

func TestTailJSON(t *testing.T) {
	nats, _ := devServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tail := exec.CommandContext(ctx, build(t, "saap", "github.com/saap-go/agent/cmd/saap"), "tail", "-class", "EchoAgent", "-n", "3", "-json")
	tail.Env = append(envWithout("NATS_URL"), "NATS_URL="+nats)
	var out bytes.Buffer
	tail.Stdout = &out
	stderr, _ := tail.StderrPipe()
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stderr).ReadString('\n'); err != nil || !strings.HasPrefix(line, "following ") {
		t.Fatalf("tail said %q, %v", line, err)
	}
	ok(t, saap(t, nats, "", "chat", "EchoAgent/tailjson", "hello json"))
	if err := tail.Wait(); err != nil {
		t.Fatal(err)
	}
	golden(t, "tail-json", out.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines of JSON, got %q", out.String())
	}
	var first stored
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first.Class != "EchoAgent" || first.ID != "tailjson" || first.Name != "UserMessageEvent" || first.Type != "control_event" || len(first.Run) != 24 ||
		!strings.Contains(string(first.Event), `"hello json"`) {
		t.Errorf("first line: %+v", first)
	}
}

func TestChatJSONAndRunID(t *testing.T) {
	nats, _ := devServer(t)
	r := saap(t, nats, "", "chat", "EchoAgent/runid", "hi")
	ok(t, r)
	run, found := strings.CutPrefix(strings.TrimSpace(r.stderr), "run ")
	if !found || len(run) != 24 {
		t.Fatalf("chat's stderr %q does not name the run", r.stderr)
	}
	ok(t, saap(t, nats, "", "run", "show", run))

	r = saap(t, nats, "", "chat", "-json", "EchoAgent/json", "hi json")
	ok(t, r)
	golden(t, "chat-json", r.stdout)
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var cl chatLine
		if err := json.Unmarshal([]byte(l), &cl); err != nil || len(cl.Run) != 24 || cl.Name == "" || len(cl.Event) == 0 {
			t.Errorf("line %q: %v %+v", l, err, cl)
		}
	}
}

// A run that asked a question is waiting: the engine writes that status
// before it publishes the question, so the list shows it once chat saw it.
func TestRunList(t *testing.T) {
	nats, _ := devServer(t)
	r := saap(t, nats, "", "chat", "EchoAgent/list", "ask me")
	if r.code != 1 || !strings.Contains(r.stderr, "standard input ended") {
		t.Fatalf("chat: exit %d, %s", r.code, r.stderr)
	}
	run, _, _ := strings.Cut(strings.TrimPrefix(r.stderr, "run "), "\n")

	r = saap(t, nats, "", "run", "list", "-class", "EchoAgent", "-state", "waiting,pending", "-limit", "1000", "-json")
	ok(t, r)
	var recs []struct {
		Run    string `json:"run_id"`
		Thread string `json:"thread_id"`
		State  string `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("run list -json: %v %s", err, r.stdout)
	}
	i := slices.IndexFunc(recs, func(r struct {
		Run    string `json:"run_id"`
		Thread string `json:"thread_id"`
		State  string `json:"status"`
	}) bool {
		return r.Run == run
	})
	if i < 0 || recs[i].State != "waiting" {
		t.Fatalf("run list -state waiting lacks run %s: %s", run, r.stdout)
	}
	r = saap(t, nats, "", "run", "list", "-thread", recs[i].Thread)
	ok(t, r)
	golden(t, "run-list", r.stdout)

	r = saap(t, nats, "", "run", "list", "-class", "EchoAgent", "-thread", recs[i].Thread, "-state", "completed,failed", "-json")
	ok(t, r)
	if strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("run list -state completed,failed: %s", r.stdout)
	}
}

// Reply and Greet both emit Replied: the timeline names the step the
// engine ran, Greet on the answer, and no re-run.
func TestRunShowAttribution(t *testing.T) {
	nats, _ := devServer(t)
	r := saap(t, nats, "Ada\n", "chat", "EchoAgent/attr", "ask me")
	ok(t, r)
	run, found := strings.CutPrefix(strings.TrimSpace(r.stderr), "run ")
	if !found {
		t.Fatalf("chat's stderr %q does not name the run", r.stderr)
	}
	r = saap(t, nats, "", "run", "show", run)
	ok(t, r)
	golden(t, "run-show-hitl", r.stdout)
	if !strings.Contains(r.stdout, "← Greet on HumanInTheLoopInputResponseEvent") || strings.Contains(r.stdout, "re-run") {
		t.Errorf("the answer is not Greet's, or a re-run is shown:\n%s", r.stdout)
	}

	// examples/devmode: Hello and Welcome both emit Answered, and the
	// graph lists Hello's edge first.
	nats, _ = devAgent(t, "devmode", "github.com/saap-go/agent/examples/devmode")
	r = saap(t, nats, "Ada\n", "chat", "Greeter", "name please")
	ok(t, r)
	run = strings.TrimPrefix(strings.TrimSpace(r.stderr), "run ")
	r = saap(t, nats, "", "run", "show", run)
	ok(t, r)
	golden(t, "run-show-devmode", r.stdout)
	if !strings.Contains(r.stdout, "← Welcome on HumanInTheLoopInputResponseEvent") || strings.Contains(r.stdout, "re-run") {
		t.Errorf("the answer is not Welcome's, or a re-run is shown:\n%s", r.stdout)
	}
}

// A waiting run is cancelled: saap run cancel sends the request, waits for
// the status to turn cancelled, and says so; a second cancel finds the run
// ended and does nothing.
func TestRunCancel(t *testing.T) {
	nats, _ := devServer(t)
	r := saap(t, nats, "", "chat", "EchoAgent/cancel", "ask me")
	if r.code != 1 || !strings.Contains(r.stderr, "standard input ended") {
		t.Fatalf("chat: exit %d, %s", r.code, r.stderr)
	}
	run, _, _ := strings.Cut(strings.TrimPrefix(r.stderr, "run "), "\n")

	r = saap(t, nats, "", "run", "cancel", "-class", "EchoAgent", "-reason", "no answer coming", run)
	ok(t, r)
	if want := "cancel requested: run " + run + " of EchoAgent (it was waiting)\nstatus: cancelled\n"; r.stdout != want {
		t.Errorf("run cancel printed %q, want %q", r.stdout, want)
	}
	r = saap(t, nats, "", "run", "cancel", run) // the class found by asking
	ok(t, r)
	if !strings.Contains(r.stdout, "has ended (cancelled): nothing to cancel") {
		t.Errorf("second cancel printed %q", r.stdout)
	}
	r = saap(t, nats, "", "run", "cancel", "-class", "EchoAgent", "a.b")
	if r.code != 2 {
		t.Errorf("cancel of an invalid run id: exit %d, want 2", r.code)
	}
}

// A conversation names its thread; -thread shows the thread's history and
// continues it.
func TestChatResumesThread(t *testing.T) {
	nats, _ := devServer(t)
	r := saap(t, nats, "one\ntwo\n", "chat", "EchoAgent/resume")
	ok(t, r)
	m := regexp.MustCompile(`thread ([0-9a-f]{24})`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("chat's stderr %q does not name the thread", r.stderr)
	}
	r = saap(t, nats, "", "chat", "-thread", m[1], "EchoAgent/resume", "three")
	ok(t, r)
	want := []string{"> one", "You said: one", "> two", "You said: two", "You said: three"}
	at := 0
	for _, w := range want {
		i := strings.Index(r.stdout[at:], w)
		if i < 0 {
			t.Fatalf("resumed chat's output lacks %q after the earlier lines:\n%s", w, r.stdout)
		}
		at += i + len(w)
	}
	for _, bad := range []struct{ thread, msg string }{
		{"xyz", "-thread must be 24 lower-case hex characters"},
		{"0123456789abcdef01234567", "is not known"},
	} {
		r = saap(t, nats, "", "chat", "-thread", bad.thread, "EchoAgent/resume", "hi")
		if r.code == 0 || !strings.Contains(r.stderr, bad.msg) {
			t.Errorf("-thread %s: exit %d, %s", bad.thread, r.code, r.stderr)
		}
	}
}

package agent_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTutorialAsAUserCopiesIt copies the README's tutorial (main.go and
// main_test.go) and the package documentation's program into a new module
// that requires this one through a replace directive, as a user would, and
// checks that the tutorial's test passes and that both programs start on
// an embedded NATS server and exit with status 0 on SIGTERM.
func TestTutorialAsAUserCopiesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs programs in a new module; skipped under -short")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	blocks := tutGoBlocks(tutSection(t, tutRead(t, "README.md"), "## Tutorial"))
	var mainSrc, testSrc string
	for _, b := range blocks {
		switch {
		case strings.Contains(b, "func main()"):
			mainSrc = b
		case strings.Contains(b, "func Test"):
			testSrc = b
		}
	}
	if mainSrc == "" || testSrc == "" {
		t.Fatalf("README tutorial: want a go block with func main and one with a test, found %d go blocks", len(blocks))
	}
	headline := tutDocBlock(t, tutRead(t, "doc.go"))
	for name, src := range map[string]string{"README main.go": mainSrc, "README main_test.go": testSrc, "doc.go program": headline} {
		if !strings.HasPrefix(src, "package main\n") {
			t.Fatalf("%s does not start with a package clause, so it cannot be copied as it is:\n%s", name, src)
		}
	}

	mod := t.TempDir()
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(tutRead(t, "go.mod"))
	if goVersion == nil {
		t.Fatal("go.mod has no go directive")
	}
	tutWrite(t, filepath.Join(mod, "go.mod"), "module example.com/tutorial\n\ngo "+goVersion[1]+
		"\n\nrequire github.com/saap-go/agent v0.0.0\n\nreplace github.com/saap-go/agent => "+root+"\n")
	tutWrite(t, filepath.Join(mod, "go.sum"), tutRead(t, "go.sum"))
	tutWrite(t, filepath.Join(mod, "tutorial", "main.go"), mainSrc)
	tutWrite(t, filepath.Join(mod, "tutorial", "main_test.go"), testSrc)
	tutWrite(t, filepath.Join(mod, "headline", "main.go"), headline)

	// The user's module resolves its whole module graph, which needs go.mod
	// files that building this repository never fetched: the proxy is used
	// as the user's go command would use it.
	goEnv := tutEnv("GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"), "GOWORK=off")
	tutGo(t, mod, goEnv, "test", "-count=1", "./tutorial/")
	bin := filepath.Join(mod, "bin")
	tutGo(t, mod, goEnv, "build", "-o", bin+string(filepath.Separator), "./tutorial", "./headline")

	for _, name := range []string{"tutorial", "headline"} {
		t.Run(name, func(t *testing.T) { tutStartAndTerminate(t, filepath.Join(bin, name)) })
	}
}

// tutStartAndTerminate starts bin on an embedded NATS server, waits until the
// runner logs that it takes events, sends SIGTERM and expects exit status 0.
func tutStartAndTerminate(t *testing.T, bin string) {
	cmd := exec.Command(bin)
	cmd.Env = tutEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	done := make(chan struct{}) // closed after Wait; then out and waitErr are final
	var out strings.Builder
	var waitErr error
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if !seen && strings.Contains(sc.Text(), "agent runner ready") {
				seen = true
				close(ready)
			}
		}
		waitErr = cmd.Wait()
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})

	select {
	case <-ready:
	case <-done:
		t.Fatalf("%s exited before it was ready: %v\n%s", filepath.Base(bin), waitErr, out.String())
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s not ready within 2 minutes:\n%s", filepath.Base(bin), out.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		if waitErr != nil {
			t.Fatalf("%s after SIGTERM: %v, want exit status 0\n%s", filepath.Base(bin), waitErr, out.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s still running 30 s after SIGTERM:\n%s", filepath.Base(bin), out.String())
	}
}

// tutEnv is the test's environment without the variables that would make
// a program join external servers or change how go resolves modules, plus
// extra.
func tutEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "NATS_URL", "NATS_ENDPOINT", "REDIS_URL", "GOFLAGS", "GOWORK":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

func tutGo(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s in the copied module: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// section returns the part of a Markdown document from the heading line
// to the next heading of the same level.
func tutSection(t *testing.T, doc, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n"+heading)
	if !ok {
		t.Fatalf("README has no %q section", heading)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// tutGoBlocks returns the contents of the ```go fenced blocks of a Markdown
// text.
func tutGoBlocks(md string) []string {
	var blocks []string
	for {
		_, rest, ok := strings.Cut(md, "```go\n")
		if !ok {
			return blocks
		}
		body, after, ok := strings.Cut(rest, "\n```")
		if !ok {
			return blocks
		}
		blocks = append(blocks, body+"\n")
		md = after
	}
}

// tutDocBlock returns the first code block of a Go comment: the lines
// indented with a tab after "//", and the empty comment lines between them.
func tutDocBlock(t *testing.T, src string) string {
	t.Helper()
	var b strings.Builder
	started := false
	for line := range strings.Lines(src) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "//\t"):
			started = true
			b.WriteString(strings.TrimPrefix(line, "//\t") + "\n")
		case started && line == "//":
			b.WriteString("\n")
		case started:
			return strings.TrimRight(b.String(), "\n") + "\n"
		}
	}
	t.Fatal("doc.go has no code block")
	return ""
}

func tutRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func tutWrite(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

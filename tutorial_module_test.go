package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUseItInYourModule follows the README's "Use it in your module" with
// the checkout beside a new module: once with go work init, once with a
// replace line and go mod tidy, each time running the commands as the
// README writes them and then the tutorial's test. go get of the published
// module needs the module proxy to have it, so that line is only checked
// to be there.
func TestUseItInYourModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tutorial in new modules; skipped under -short")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	readme := tutRead(t, "README.md")
	section := tutSection(t, readme, "## Use it in your module")
	var cmds [][]string
	for _, block := range tutShBlocks(section) {
		for line := range strings.Lines(block) {
			line, _, _ = strings.Cut(line, "#")
			if f := strings.Fields(line); len(f) > 0 {
				cmds = append(cmds, f)
			}
		}
	}
	find := func(prefix string) []string {
		t.Helper()
		for _, c := range cmds {
			if strings.HasPrefix(strings.Join(c, " "), prefix) {
				return c
			}
		}
		t.Fatalf("the README's \"Use it in your module\" has no %q", prefix)
		return nil
	}
	initCmd := find("go mod init ")
	find("go get github.com/saap-go/agent@")
	clone := find("git clone ")
	checkout := clone[len(clone)-1] // where the README puts the checkout
	blocks := tutGoBlocks(tutSection(t, readme, "## Tutorial"))
	var mainSrc, testSrc string
	for _, b := range blocks {
		switch {
		case strings.Contains(b, "func main()"):
			mainSrc = b
		case strings.Contains(b, "func Test"):
			testSrc = b
		}
	}

	for _, way := range []struct {
		name string
		cmds [][]string
	}{
		{"go work", [][]string{find("go work init ")}},
		{"replace", [][]string{find("go mod edit -replace "), find("go mod tidy")}},
	} {
		t.Run(way.name, func(t *testing.T) {
			parent := t.TempDir()
			// The checkout, where the README clones it: this repository.
			if err := os.Symlink(root, filepath.Join(parent, filepath.Base(checkout))); err != nil {
				t.Fatal(err)
			}
			mod := filepath.Join(parent, "myagent")
			tutWrite(t, filepath.Join(mod, "main.go"), mainSrc)
			tutWrite(t, filepath.Join(mod, "main_test.go"), testSrc)
			env := tutEnv()
			if way.name != "go work" {
				env = tutEnv("GOWORK=off")
			}
			for _, c := range append([][]string{initCmd}, way.cmds...) {
				tutGo(t, mod, env, c[1:]...)
			}
			tutGo(t, mod, env, "test", "-count=1", "./...")
		})
	}
}

// tutShBlocks returns the contents of the ```sh fenced blocks of a Markdown
// text.
func tutShBlocks(md string) []string {
	var blocks []string
	for {
		_, rest, ok := strings.Cut(md, "```sh\n")
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

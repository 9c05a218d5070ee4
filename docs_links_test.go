package agent_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every page under docs/ is linked from the README or the docs index, the
// README links the index, and the relative links of these pages lead to
// files that exist.
func TestDocsAreLinked(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	linked := map[string]bool{}
	for _, page := range []string{"README.md", "docs/README.md", "docs/glossary.md"} {
		for _, m := range link.FindAllStringSubmatch(tutRead(t, page), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			path := filepath.Clean(filepath.Join(filepath.Dir(page), target))
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links %s, which does not exist", page, target)
			}
			linked[filepath.ToSlash(path)] = true
		}
	}
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if !linked[filepath.ToSlash(p)] {
			t.Errorf("%s is linked from neither README.md nor docs/README.md", p)
		}
	}
}

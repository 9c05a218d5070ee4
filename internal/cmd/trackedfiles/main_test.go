package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckRejectsATrackedBinary(t *testing.T) {
	dir := repo(t, map[string][]byte{
		"main.go":               []byte("package main\n"),
		"MZnotes":               []byte("MZ is a text file here\n"),
		"agent":                 append([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1}, make([]byte, 64)...),
		"big.json":              make([]byte, maxSize+1),
		"testdata/" + "big.bin": make([]byte, maxSize+1),
	})
	bad, err := check(dir, []string{"testdata/*"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(bad, "\n")
	if len(bad) != 2 || !strings.Contains(got, "agent: an executable binary") || !strings.Contains(got, "big.json:") {
		t.Fatalf("want the binary and the large file reported, got:\n%s", got)
	}
}

func TestCheckAcceptsThisRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skip("not in a git checkout:", err)
	}
	bad, err := check(strings.TrimSpace(string(root)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("the repository tracks build outputs or large files:\n%s", strings.Join(bad, "\n"))
	}
}

func repo(t *testing.T, files map[string][]byte) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

package adaptertest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// RunNode runs interop/<name>/run.mjs with args under node and returns its
// standard output: the official npm clients' tests. Without node, or
// without the folder's node_modules (`npm ci` there), the test is skipped
// with a message saying which.
func RunNode(t testing.TB, name string, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("node is not installed: the official client test of interop/%s needs it", name)
	}
	_, here, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(here), "..", "..", "..", "interop", name)
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Skipf("%s/node_modules is missing: run `npm ci` there for the official client test", filepath.Clean(dir))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"run.mjs"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		var stderr []byte
		if errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("node interop/%s/run.mjs: %v\n%s", name, err, stderr)
	}
	return out
}

package a2a_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestNodeClient runs interop/a2a/test.mjs, the official JavaScript client
// (@a2a-js/sdk) against a gateway with a real agent: streaming, blocking
// send, an input-required round trip, cancel, and the refusals of another
// user's calls, each over the v1.0 and the v0.3 method names. It needs
// node and the folder's node_modules (`npm ci` in interop/a2a).
func TestNodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: skipping the @a2a-js/sdk interop test")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "interop", "a2a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk")); err != nil {
		t.Skipf("%s has no node_modules: run `npm ci` there to enable the @a2a-js/sdk interop test", dir)
	}
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "A2A_URL="+e.url, "TOKEN_ALICE="+tokenAlice, "TOKEN_BOB="+tokenBob)
	out, err := cmd.CombinedOutput()
	t.Logf("node test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("node test.mjs: %v", err)
	}
}

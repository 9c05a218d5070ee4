package agent_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/saap-go/agent"

// The import rules of docs/architecture.md.
func TestArchitectureImportRules(t *testing.T) {
	if testing.Short() {
		t.Skip("lists every package's imports with go list")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	engineUsers := []string{module, module + "/process", module + "/agenttest", module + "/gateway/internal/adaptertest"}
	capability := func(p string) bool {
		for _, root := range []string{"/hitl", "/llm", "/guard", "/conversation", "/vector", "/memory", "/knowledge", "/files", "/gateway", "/schedule"} {
			if p == module+root || strings.HasPrefix(p, module+root+"/") {
				return true
			}
		}
		return false
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, imports := f[0], f[1:]
		seen++
		for _, imp := range imports {
			if imp == module+"/internal/engine" && !slices.Contains(engineUsers, pkg) && !strings.Contains(pkg, "/examples/") {
				t.Errorf("%s imports the engine; only %v may", pkg, engineUsers)
			}
			if capability(pkg) && !strings.HasPrefix(pkg, module+"/gateway/internal/") && !strings.Contains(pkg, "/cmd/") &&
				(imp == module || imp == module+"/process" || imp == module+"/internal/engine") {
				t.Errorf("%s imports %s: capabilities and the gateway must not import the engine or a runner", pkg, imp)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("go list gave %d packages, want the module's", seen)
	}
}

// A program links what it imports: the runner alone links neither the
// NATS server, the Redis client, the Prometheus client nor the cron parser
// (docs/architecture.md).
func TestRunnerLinksNoServerNorRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the runner's dependencies with go list")
	}
	out, err := exec.Command("go", "list", "-deps", module).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/nats-io/nats-server") || strings.HasPrefix(dep, "github.com/redis/go-redis") ||
			strings.HasPrefix(dep, "github.com/prometheus/") || strings.HasPrefix(dep, "github.com/robfig/cron") {
			t.Errorf("the root package links %s; it belongs to a package a program imports for it", dep)
		}
	}
}

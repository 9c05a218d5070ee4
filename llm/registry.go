package llm

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
)

// Factory makes a provider from the environment (API keys, base URL).
type Factory struct {
	// New builds the provider.
	New func() (Provider, error)
	// EnvKey is the variable whose presence selects this provider in
	// FromEnv ("OPENAI_API_KEY"); empty for providers FromEnv skips.
	EnvKey string
	// DefaultModel is used when a spec names no model.
	DefaultModel string
}

var (
	regMu    sync.RWMutex
	registry = map[string]Factory{}
)

// Register makes a provider available to Open and FromEnv under name.
// Provider packages call it from init, so importing one registers it:
//
//	import _ "github.com/saap-go/agent/llm/anthropic"
func Register(name string, f Factory) {
	regMu.Lock()
	defer regMu.Unlock()
	if f.New == nil {
		panic("llm: Register " + name + " without New")
	}
	registry[name] = f
}

// Providers lists the registered provider names, sorted.
func Providers() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrNoProvider reports that no registered provider is configured.
var ErrNoProvider = errors.New("llm: no provider configured")

// Open returns the provider and model that spec names, as
// "provider:model" ("anthropic:claude-sonnet-4-5") or "provider" alone
// for its default model.
func Open(spec string) (Provider, string, error) {
	name, model, _ := strings.Cut(spec, ":")
	regMu.RLock()
	f, ok := registry[name]
	regMu.RUnlock()
	if !ok {
		return nil, "", fmt.Errorf("llm: unknown provider %q in %q (registered: %s; import the provider's package to register it)",
			name, spec, strings.Join(Providers(), ", "))
	}
	if model == "" {
		model = f.DefaultModel
	}
	p, err := f.New()
	if err != nil {
		return nil, "", fmt.Errorf("llm: %s: %w", name, err)
	}
	return p, model, nil
}

// FromEnv picks a provider from the environment: LLM_MODEL as a spec
// when set, else the first registered provider whose key variable is
// set, in the order openai, anthropic, gemini, then the rest by name.
// It returns ErrNoProvider when none is configured.
func FromEnv() (Provider, string, error) {
	if spec := os.Getenv("LLM_MODEL"); spec != "" {
		return Open(spec)
	}
	order := []string{"openai", "anthropic", "gemini"}
	for _, n := range Providers() {
		if n != "openai" && n != "anthropic" && n != "gemini" {
			order = append(order, n)
		}
	}
	for _, n := range order {
		regMu.RLock()
		f, ok := registry[n]
		regMu.RUnlock()
		if ok && f.EnvKey != "" && os.Getenv(f.EnvKey) != "" {
			return Open(n)
		}
	}
	return nil, "", ErrNoProvider
}

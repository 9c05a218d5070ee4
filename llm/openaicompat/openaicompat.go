// Package openaicompat is the llm.Provider for servers that speak
// OpenAI's chat-completions protocol at their own address: Ollama, vLLM,
// LM Studio, LiteLLM and the like. It is package openai pointed at
// OPENAI_BASE_URL, sending the token limit as "max_tokens" (the field
// these servers know) and needing no API key.
//
// Importing the package registers it as "openaicompat", which
// llm.FromEnv picks when OPENAI_BASE_URL is set (after "openai",
// "anthropic" and "gemini" when their keys are set too; with
// OPENAI_API_KEY set, "openai" is chosen and its SDK follows
// OPENAI_BASE_URL as well). Name the model with LLM_MODEL, as in
// "openaicompat:qwen3:8b"; reasoning that such servers stream as
// "reasoning_content" becomes thinking events.
package openaicompat

import (
	"fmt"
	"os"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/openai"
)

// Name is the registry name of this provider.
const Name = "openaicompat"

// DefaultModel is the model used when no spec or request names one: a
// common default of local servers.
const DefaultModel = "llama3.2"

// BaseURLEnv is the variable that holds the server's address, as
// "http://localhost:11434/v1".
const BaseURLEnv = "OPENAI_BASE_URL"

// noKey is sent when no key is configured; local servers ignore it.
const noKey = "unused"

func init() {
	llm.Register(Name, llm.Factory{
		New:          func() (llm.Provider, error) { return New() },
		EnvKey:       BaseURLEnv,
		DefaultModel: DefaultModel,
	})
}

// New returns a provider for the server at OPENAI_BASE_URL, or at the
// address an openai.WithBaseURL in opts names (opts win over the
// environment). The key is OPENAI_API_KEY when set.
func New(opts ...openai.Option) (*openai.Provider, error) {
	base := []openai.Option{openai.WithName(Name), openai.WithModel(DefaultModel), openai.WithLegacyMaxTokens()}
	url := os.Getenv(BaseURLEnv)
	if url != "" {
		base = append(base, openai.WithBaseURL(url))
	}
	if os.Getenv("OPENAI_API_KEY") == "" {
		base = append(base, openai.WithAPIKey(noKey))
	}
	all := append(base, opts...)
	if url == "" && !openai.HasBaseURL(all...) {
		return nil, fmt.Errorf("%s: no server address: set %s (as http://localhost:11434/v1) or pass openai.WithBaseURL", Name, BaseURLEnv)
	}
	return openai.New(all...)
}

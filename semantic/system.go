package semantic

import (
	"strings"

	"github.com/saap-go/agent/event"
)

// modelSystems name the AI product by the model's name, for providers
// that host others' models (OpenAI-compatible servers, gateways).
var modelSystems = []struct{ prefix, system string }{
	{"gpt-", "openai"}, {"chatgpt", "openai"}, {"o1", "openai"}, {"o3", "openai"}, {"o4", "openai"},
	{"text-embedding", "openai"}, {"davinci", "openai"},
	{"claude", "anthropic"},
	{"gemini", "vertexai"}, // Google's one well-known value
	{"mistral", "mistralai"}, {"mixtral", "mistralai"}, {"codestral", "mistralai"}, {"magistral", "mistralai"},
	{"command", "cohere"},
	{"grok", "xai"},
	{"deepseek", "deepseek"},
	{"llama", "meta"},
}

// providerSystems name the AI product by the provider's name.
var providerSystems = map[string]string{
	"openai": "openai", "openailike": "openai", "openaicompat": "openai", "azure": "openai", "azureopenai": "openai",
	"anthropic": "anthropic",
	"gemini":    "vertexai", "google": "vertexai", "vertex": "vertexai", "vertexai": "vertexai", "googlegenai": "vertexai",
	"cohere":  "cohere",
	"mistral": "mistralai", "mistralai": "mistralai",
	"xai":      "xai",
	"deepseek": "deepseek",
	"bedrock":  "amazon", "amazon": "amazon", "aws": "amazon",
}

// llmSystem is the OpenInference llm.system of e, which the spec
// requires on LLM spans: the event's own, else the one its model names,
// else its provider's, else the provider's name itself; "" only when the
// event names neither model nor provider.
func llmSystem(e *event.LLMEvent) string {
	if e.System != nil && *e.System != "" {
		return *e.System
	}
	if e.ChatModelName != nil {
		model := strings.ToLower(*e.ChatModelName)
		model = model[strings.LastIndexByte(model, '/')+1:]
		for _, m := range modelSystems {
			if strings.HasPrefix(model, m.prefix) {
				return m.system
			}
		}
	}
	if e.Provider == nil {
		return ""
	}
	key := strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(*e.Provider))
	if s, ok := providerSystems[key]; ok {
		return s
	}
	return *e.Provider
}

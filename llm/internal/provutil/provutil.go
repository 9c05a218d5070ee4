// Package provutil holds what the provider packages share and no SDK
// knows: reading a wait from response headers, classifying a failure by
// status and wording, and the queue that turns a provider's chunks into
// single events.
package provutil

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/saap-go/agent/llm"
)

// RetryAfter reads the wait a response asks for: retry-after-ms (OpenAI),
// then Retry-After in seconds or as an HTTP date. It returns 0 when
// there is none.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Classify names the kind of a failure from its HTTP status (0 inside a
// stream) and the provider's error type, code and message. Providers
// name a too-long context only in words, so the words are read too.
func Classify(status int, words ...string) llm.ErrorKind {
	text := strings.ToLower(strings.Join(words, " "))
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(text, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("context_length_exceeded", "context length", "context window", "prompt is too long",
		"too many tokens", "input is too long", "exceeds the maximum number of tokens", "token count"):
		return llm.ErrContextTooLong
	case status == http.StatusRequestEntityTooLarge:
		return llm.ErrContextTooLong
	case status == 529 || has("overloaded"):
		return llm.ErrOverloaded
	case status == http.StatusTooManyRequests || has("rate_limit", "rate limit", "resource_exhausted", "quota"):
		return llm.ErrRateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden ||
		has("authentication_error", "permission_error", "permission_denied", "unauthenticated", "invalid_api_key", "api key not valid"):
		return llm.ErrAuth
	case has("content_policy", "content_filter", "refus", "safety"):
		return llm.ErrRefused
	case status >= 500 || has("api_error", "server_error", "internal", "unavailable"):
		return llm.ErrUnavailable
	case status >= 400 || has("invalid_request", "invalid_argument", "not_found", "failed_precondition"):
		return llm.ErrBadRequest
	}
	return llm.ErrUnavailable
}

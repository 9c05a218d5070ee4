package provutil

import (
	"net/http"
	"testing"
	"time"

	"github.com/saap-go/agent/llm"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"milliseconds win", http.Header{"Retry-After": {"7"}, "Retry-After-Ms": {"1500"}}, 1500 * time.Millisecond},
		{"date", http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, 30 * time.Second},
		{"past date", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
	} {
		if got := RetryAfter(tc.h, now); got != tc.want {
			t.Errorf("%s: RetryAfter = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status int
		words  []string
		want   llm.ErrorKind
	}{
		{429, []string{"rate_limit_error"}, llm.ErrRateLimited},
		{529, []string{"overloaded_error"}, llm.ErrOverloaded},
		{0, []string{"overloaded_error", "Overloaded"}, llm.ErrOverloaded},
		{400, []string{"context_length_exceeded", "This model's maximum context length is 128000 tokens"}, llm.ErrContextTooLong},
		{400, []string{"invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"}, llm.ErrContextTooLong},
		{413, nil, llm.ErrContextTooLong},
		{401, []string{"invalid_api_key"}, llm.ErrAuth},
		{403, []string{"PERMISSION_DENIED"}, llm.ErrAuth},
		{400, []string{"content_policy_violation"}, llm.ErrRefused},
		{400, []string{"invalid_request_error", "messages: field required"}, llm.ErrBadRequest},
		{500, []string{"api_error"}, llm.ErrUnavailable},
		{503, []string{"UNAVAILABLE"}, llm.ErrUnavailable},
		{429, []string{"RESOURCE_EXHAUSTED"}, llm.ErrRateLimited},
	} {
		if got := Classify(tc.status, tc.words...); got != tc.want {
			t.Errorf("Classify(%d, %q) = %s, want %s", tc.status, tc.words, got, tc.want)
		}
	}
}

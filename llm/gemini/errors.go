package gemini

import (
	"context"
	"errors"
	"time"

	"google.golang.org/genai"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/internal/provutil"
)

// mapError classifies the SDK's errors as *llm.Error; cancellation
// passes through unchanged. inStream marks an error that
// arrived inside the stream, which has no status of its own.
func mapError(err error, inStream bool) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) {
		var p *genai.APIError
		if !errors.As(err, &p) || p == nil {
			return unavailable(Name, err)
		}
		apiErr = *p
	}
	status := apiErr.Code
	if inStream {
		status = 0
	}
	return &llm.Error{
		Kind:       provutil.Classify(status, apiErr.Status, apiErr.Message),
		Provider:   Name,
		StatusCode: status,
		RetryAfter: retryDelay(apiErr.Details),
		Message:    apiErr.Message,
		Err:        err,
	}
}

// retryDelay reads google.rpc.RetryInfo from an error's details, where
// the Gemini API says how long to wait.
func retryDelay(details []map[string]any) time.Duration {
	for _, d := range details {
		if t, _ := d["@type"].(string); t != "type.googleapis.com/google.rpc.RetryInfo" {
			continue
		}
		if s, ok := d["retryDelay"].(string); ok {
			if dur, err := time.ParseDuration(s); err == nil && dur > 0 {
				return dur
			}
		}
	}
	return 0
}

// unavailable classifies a failure that carries no answer from the
// provider (no connection, a body that could not be read) as
// ErrUnavailable.
func unavailable(provider string, err error) error {
	return &llm.Error{Kind: llm.ErrUnavailable, Provider: provider, Message: err.Error(), Err: err}
}

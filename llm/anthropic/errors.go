package anthropic

import (
	"context"
	"errors"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/internal/provutil"
)

// mapError classifies the SDK's errors as *llm.Error; cancellation
// passes through unchanged. inStream marks an error event that
// arrived after the response began, which has no status of its own.
func mapError(err error, inStream bool) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) {
		return unavailable(Name, err)
	}
	status := apiErr.StatusCode
	if inStream {
		status = 0
	}
	var h http.Header
	if apiErr.Response != nil {
		h = apiErr.Response.Header
	}
	msg := apiErr.Message
	if msg == "" {
		msg = http.StatusText(apiErr.StatusCode)
	}
	return &llm.Error{
		Kind:       provutil.Classify(status, string(apiErr.Type()), string(apiErr.ErrorCode()), apiErr.Message),
		Provider:   Name,
		StatusCode: status,
		RetryAfter: provutil.RetryAfter(h, time.Now()),
		Message:    msg,
		Err:        err,
	}
}

// unavailable classifies a failure that carries no answer from the
// provider (no connection, a body that could not be read) as
// ErrUnavailable.
func unavailable(provider string, err error) error {
	return &llm.Error{Kind: llm.ErrUnavailable, Provider: provider, Message: err.Error(), Err: err}
}

package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/internal/provutil"
)

// mapError classifies the SDK's errors as *llm.Error; cancellation
// passes through unchanged.
func mapError(provider string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		msg := apiErr.Message
		if msg == "" {
			msg = http.StatusText(apiErr.StatusCode)
		}
		return &llm.Error{
			Kind:       provutil.Classify(apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message),
			Provider:   provider,
			StatusCode: apiErr.StatusCode,
			RetryAfter: provutil.RetryAfter(h, time.Now()),
			Message:    msg,
			Err:        err,
		}
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		// An error the server wrote into the stream after the 200.
		var body struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    any    `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(se.Event.Data, &body)
		code, _ := body.Error.Code.(string)
		msg := body.Error.Message
		if msg == "" {
			msg = string(se.Event.Data)
		}
		return &llm.Error{
			Kind:     provutil.Classify(0, body.Error.Type, code, body.Error.Message),
			Provider: provider,
			Message:  msg,
			Err:      err,
		}
	}
	return unavailable(provider, err)
}

// unavailable classifies a failure that carries no answer from the
// provider (no connection, a body that could not be read) as
// ErrUnavailable.
func unavailable(provider string, err error) error {
	return &llm.Error{Kind: llm.ErrUnavailable, Provider: provider, Message: err.Error(), Err: err}
}

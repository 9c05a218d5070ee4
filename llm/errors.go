package llm

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrTruncated reports a stream that ended without its stop event.
var ErrTruncated = errors.New("llm: stream ended before the model finished")

// ErrorKind classifies a provider's failure so callers can branch on it
// without knowing the provider.
type ErrorKind string

// Kinds of provider errors.
const (
	ErrRateLimited    ErrorKind = "rate_limited"
	ErrOverloaded     ErrorKind = "overloaded"
	ErrContextTooLong ErrorKind = "context_too_long"
	ErrRefused        ErrorKind = "refused"
	ErrAuth           ErrorKind = "auth"
	ErrBadRequest     ErrorKind = "bad_request"
	ErrUnavailable    ErrorKind = "unavailable"
)

// Error is a provider's failure, classified.
type Error struct {
	Kind     ErrorKind
	Provider string
	// StatusCode is the provider's HTTP status, 0 when there was none
	// (an error event inside a stream).
	StatusCode int
	// RetryAfter is the wait the provider asked for, 0 when it named none.
	RetryAfter time.Duration
	Message    string
	Err        error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("llm: %s: %s", e.Provider, e.Kind)
	if e.StatusCode != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.StatusCode)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf("; retry after %s", e.RetryAfter)
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches another *Error of the same kind, so
// errors.Is(err, &llm.Error{Kind: llm.ErrRateLimited}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind && (t.Provider == "" || t.Provider == e.Provider)
}

// HTTPStatus is the status an ExceptionEvent carries for this error.
func (e *Error) HTTPStatus() int {
	switch e.Kind {
	case ErrRateLimited:
		return http.StatusTooManyRequests
	case ErrOverloaded, ErrUnavailable:
		return http.StatusServiceUnavailable
	case ErrContextTooLong:
		return http.StatusRequestEntityTooLarge
	case ErrRefused:
		return http.StatusUnprocessableEntity
	case ErrAuth:
		return http.StatusBadGateway
	case ErrBadRequest:
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}

// Temporary reports whether the same request may succeed later.
func (e *Error) Temporary() bool {
	return e.Kind == ErrRateLimited || e.Kind == ErrOverloaded || e.Kind == ErrUnavailable
}

// UserMessage is what the end user is told when a run fails on this
// error: the kind in plain words, and the wait when the provider named
// one. It never carries the provider's own text, which may hold
// internals.
func (e *Error) UserMessage() string {
	switch e.Kind {
	case ErrRateLimited:
		if e.RetryAfter > 0 {
			return fmt.Sprintf("the language model is rate limited; try again in %s", e.RetryAfter.Round(time.Second))
		}
		return "the language model is rate limited; try again later"
	case ErrOverloaded:
		return "the language model is overloaded; try again later"
	case ErrContextTooLong:
		return "the conversation is too long for the language model"
	case ErrRefused:
		return "the language model refused to answer"
	case ErrAuth:
		return "the agent could not authenticate with its language model"
	case ErrBadRequest:
		return "the language model rejected the request"
	}
	return "the language model is unavailable; try again later"
}

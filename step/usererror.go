package step

import (
	"errors"
	"fmt"
)

// UserError is a step error that carries a message for the end user. When a
// step fails, the run's ExceptionEvent shows only such a message; any other
// error is published as a generic message with a reference, and its text
// goes to the log and the trace span only, since error texts often hold
// internals (addresses, queries, keys). Make one with Userf or
// WithUserMessage and return it from a step or precondition; wrapping it
// further with %w keeps it detectable.
type UserError struct {
	// Message is shown to the end user as it is.
	Message string
	// Err is the cause, for logs and errors.Is/As; nil if there is none.
	Err error
}

// Error returns the message, then the cause if there is one.
func (e *UserError) Error() string {
	if e.Err == nil {
		return e.Message
	}
	return e.Message + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *UserError) Unwrap() error { return e.Err }

// Userf returns an error whose user-facing message is the formatted text.
// The text is published as it is, so format nothing into it the user must
// not see; to keep a cause for the logs, use WithUserMessage.
func Userf(format string, args ...any) error {
	return &UserError{Message: fmt.Sprintf(format, args...)}
}

// WithUserMessage returns err with msg as its user-facing message: the user
// sees msg, the logs and the trace see msg and err. A nil err gives an error
// with msg alone.
func WithUserMessage(err error, msg string) error {
	return &UserError{Message: msg, Err: err}
}

// UserMessage returns the user-facing message of the first UserError in
// err's chain, and false if there is none.
func UserMessage(err error) (string, bool) {
	var ue *UserError
	if errors.As(err, &ue) {
		return ue.Message, true
	}
	return "", false
}

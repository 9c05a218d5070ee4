package topic

import (
	"errors"
	"fmt"
)

// MaxControlLine is the NATS server's default max_control_line: the longest
// protocol line (PUB, HPUB, SUB, ...) it accepts. A longer line makes the
// server answer "maximum control line exceeded" and drop the connection,
// which the client then closes for good, so no subject may come near it.
const MaxControlLine = 4096

// MaxSubjectLen is the longest subject, in bytes, that the builders of this
// package return. It stays well below MaxControlLine to leave room for the
// rest of the protocol line: the reply subject of a request or a JetStream
// publish, the size fields, and the prefix of a dead-letter subject. Check
// untrusted ids against it before building (CheckSubjectLen), e.g. at an
// HTTP gateway.
const MaxSubjectLen = 3584

// ErrSubjectTooLong is matched (errors.Is) by every *LengthError.
var ErrSubjectTooLong = errors.New("subject too long")

// LengthError reports a subject longer than its limit. The subject itself
// is not kept: it may be huge and hold client input.
type LengthError struct {
	Grammar string // "agent", "process", "rpc", "discovery", or a caller's name
	Len     int    // the subject's length in bytes
	Max     int    // the limit
}

// Error names the grammar, the length and the limit.
func (e *LengthError) Error() string {
	g := e.Grammar
	if g != "" {
		g += " "
	}
	return fmt.Sprintf("topic: %ssubject of %d bytes is over the limit of %d bytes (NATS drops connections whose protocol lines exceed %d bytes)",
		g, e.Len, e.Max, MaxControlLine)
}

// Is makes every *LengthError match ErrSubjectTooLong.
func (e *LengthError) Is(target error) bool { return target == ErrSubjectTooLong }

// CheckSubjectLen reports a subject longer than MaxSubjectLen as a
// *LengthError; grammar names it in the message.
func CheckSubjectLen(grammar, subject string) error {
	if len(subject) > MaxSubjectLen {
		return &LengthError{Grammar: grammar, Len: len(subject), Max: MaxSubjectLen}
	}
	return nil
}

// build joins root and toks like join, but refuses a result longer than
// MaxSubjectLen before building it.
func build(grammar, root string, toks ...string) (string, error) {
	n := len(root) + len(toks)
	for _, t := range toks {
		n += len(t)
	}
	if n > MaxSubjectLen {
		return "", &LengthError{Grammar: grammar, Len: n, Max: MaxSubjectLen}
	}
	return join(root, toks...), nil
}

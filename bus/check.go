package bus

import (
	"fmt"

	"github.com/saap-go/agent/topic"
)

// CheckMsg reports whether m may be published on a bus whose max payload is
// maxPayload bytes: a valid subject (and reply subject, if any) short
// enough for the server's protocol line (MaxWireSubjectLen), and data plus
// encoded headers within the limit. Implementations call it before any I/O.
func CheckMsg(m *Msg, maxPayload int) error {
	if m == nil {
		return fmt.Errorf("%w: nil message", ErrInvalidSubject)
	}
	if err := ValidateSubject(m.Subject); err != nil {
		return err
	}
	if m.Reply != "" {
		if err := ValidateSubject(m.Reply); err != nil {
			return fmt.Errorf("reply subject: %w", err)
		}
	}
	if err := checkLineLen(m.Subject, m.Reply); err != nil {
		return err
	}
	for k, vs := range m.Header {
		if err := checkHeader(k, vs); err != nil {
			return err
		}
	}
	if size := len(m.Data) + m.Header.wireSize(); maxPayload > 0 && size > maxPayload {
		return &PayloadError{Subject: m.Subject, Size: size, Max: maxPayload}
	}
	return nil
}

// CheckSubscribe reports whether a subscription may be made: a valid
// pattern short enough for the protocol line, a valid queue group name if
// queue is set, a handler.
// Implementations call it before any I/O.
func CheckSubscribe(pattern, queue string, h func(*Msg)) error {
	if err := ValidatePattern(pattern); err != nil {
		return err
	}
	if err := checkLineLen(pattern, queue); err != nil {
		return err
	}
	if queue != "" {
		if err := ValidateSubject(queue); err != nil {
			return fmt.Errorf("queue group: %w", err)
		}
	}
	if h == nil {
		return fmt.Errorf("bus: Subscribe to %q with a nil handler", pattern)
	}
	return nil
}

func checkHeader(k string, vs []string) error {
	if k == "" {
		return fmt.Errorf("bus: empty header key")
	}
	for _, r := range k {
		if r <= ' ' || r == ':' || r >= 0x7f {
			return fmt.Errorf("bus: header key %q holds %q, not allowed in NATS header keys", k, r)
		}
	}
	for _, v := range vs {
		for _, r := range v {
			if r == '\r' || r == '\n' {
				return fmt.Errorf("bus: header %q has a value with a line break", k)
			}
		}
	}
	return nil
}

// PayloadError reports a message larger than the bus's max payload. It
// matches ErrPayloadTooLarge with errors.Is.
type PayloadError struct {
	Subject string
	Size    int // data plus encoded headers, in bytes
	Max     int // the server's max_payload
}

// Error names the subject, the size and the limit.
func (e *PayloadError) Error() string {
	return fmt.Sprintf("bus: payload too large: message to %q is %d bytes (data and headers), over the server's max_payload of %d bytes",
		e.Subject, e.Size, e.Max)
}

// Is makes errors.Is(err, ErrPayloadTooLarge) true.
func (e *PayloadError) Is(target error) bool { return target == ErrPayloadTooLarge }

// MaxWireSubjectLen bounds the subject and reply subject (or queue group)
// of one message or subscription together, in bytes. It is the NATS
// control-line limit less room for the protocol verb, the size fields and
// the reply inbox the client adds to a JetStream publish: a longer line
// would make the server drop the connection, which the client then closes
// for good. Subjects built by package topic stay below topic.MaxSubjectLen,
// which leaves room for a dead-letter prefix too.
const MaxWireSubjectLen = topic.MaxControlLine - 256

// checkLineLen refuses a subject and reply (or queue) too long for one
// protocol line. The error matches ErrInvalidSubject and
// topic.ErrSubjectTooLong.
func checkLineLen(subject, reply string) error {
	if n := len(subject) + len(reply); n > MaxWireSubjectLen {
		return fmt.Errorf("%w: %w", ErrInvalidSubject, &topic.LengthError{Len: n, Max: MaxWireSubjectLen})
	}
	return nil
}

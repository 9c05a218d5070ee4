package bus

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Headers a dead letter carries besides the original message's headers.
const (
	HeaderDeadLetterReason     = "Saap-Deadletter-Reason"
	HeaderDeadLetterSubject    = "Saap-Deadletter-Subject"
	HeaderDeadLetterStream     = "Saap-Deadletter-Stream"
	HeaderDeadLetterSeq        = "Saap-Deadletter-Seq"
	HeaderDeadLetterDeliveries = "Saap-Deadletter-Deliveries"
)

// DeadLetters says where dead letters go: a message from subject S is
// republished to Prefix + "." + S, which the stream Stream captures with the
// subject Prefix + ".>". The zero value means DefaultDeadLetters.
type DeadLetters struct {
	Prefix string // default "deadletter"
	Stream string // default "deadletter_stream"
}

// DefaultDeadLetters is the protocol's dead-letter layout: subject
// "deadletter.<original subject>" in stream "deadletter_stream".
func DefaultDeadLetters() DeadLetters {
	return DeadLetters{Prefix: "deadletter", Stream: "deadletter_stream"}
}

func (d DeadLetters) orDefault() DeadLetters {
	def := DefaultDeadLetters()
	if d.Prefix == "" {
		d.Prefix = def.Prefix
	}
	if d.Stream == "" {
		d.Stream = def.Stream
	}
	return d
}

// Subject returns the dead-letter subject for a message from original. An
// original so long that the prefixed subject could not be published
// (MaxWireSubjectLen) keeps its first two tokens (agent.<Class>, so per-class
// permissions and filters still apply) followed by the token TooLongSubject;
// the dead letter's Saap-Deadletter-Subject header still holds it whole.
func (d DeadLetters) Subject(original string) string {
	prefix := d.orDefault().Prefix
	s := prefix + "." + original
	if len(s) <= MaxWireSubjectLen {
		return s
	}
	if t := strings.SplitN(original, ".", 3); len(t) == 3 {
		if s := prefix + "." + t[0] + "." + t[1] + "." + TooLongSubject; len(s) <= MaxWireSubjectLen {
			return s
		}
	}
	return prefix + "." + TooLongSubject
}

// TooLongSubject stands for the original subject in the subject of a dead
// letter whose original was too long to prefix.
const TooLongSubject = "subject_too_long"

// StreamConfig returns the dead-letter stream: file storage, 30 days.
func (d DeadLetters) StreamConfig() StreamConfig {
	d = d.orDefault()
	return StreamConfig{
		Name:       d.Stream,
		Subjects:   []string{d.Prefix + ".>"},
		Storage:    FileStorage,
		MaxMsgs:    -1,
		MaxAge:     30 * 24 * time.Hour,
		Duplicates: 2 * time.Minute,
	}
}

// Letter builds the dead letter for a stream message: the original subject
// under the prefix, the original headers (less NATS's own "Nats-*" headers)
// and the Saap-Deadletter-* headers. It also returns the msg id to publish it
// with, so that dead-lettering the same message twice stores it once.
func (d DeadLetters) Letter(m *Msg, stream string, seq, deliveries uint64, reason string) (*Msg, string) {
	h := Header{}
	for k, v := range m.Header {
		if strings.HasPrefix(strings.ToLower(k), "nats-") {
			continue
		}
		h[k] = append([]string(nil), v...)
	}
	h.Set(HeaderDeadLetterReason, oneLine(reason))
	h.Set(HeaderDeadLetterSubject, m.Subject)
	h.Set(HeaderDeadLetterStream, stream)
	h.Set(HeaderDeadLetterSeq, strconv.FormatUint(seq, 10))
	h.Set(HeaderDeadLetterDeliveries, strconv.FormatUint(deliveries, 10))
	id := "deadletter:" + stream + ":" + strconv.FormatUint(seq, 10)
	return &Msg{Subject: d.Subject(m.Subject), Header: h, Data: m.Data}, id
}

// HeaderDeadLetterDropped is set on a dead letter that had to leave the
// original payload (and, if need be, the original headers) out, to the
// number of bytes left out: with them the letter would have been over the
// server's max payload and could never be stored.
const HeaderDeadLetterDropped = "Saap-Deadletter-Dropped-Bytes"

// Fit returns letter (from Letter) in a form that a bus whose max payload is
// maxPayload accepts: unchanged if it fits; else without the original
// payload; else also without the original headers, keeping only the
// Saap-Deadletter-* ones. A dead letter that could never be stored would
// leave its message to be redelivered for ever.
func Fit(letter *Msg, maxPayload int) *Msg {
	size := len(letter.Data) + letter.Header.wireSize()
	if maxPayload <= 0 || size <= maxPayload {
		return letter
	}
	h := letter.Header.Clone()
	h.Set(HeaderDeadLetterDropped, strconv.Itoa(len(letter.Data)))
	if h.wireSize() > maxPayload {
		own := Header{}
		for k, v := range h {
			if strings.HasPrefix(strings.ToLower(k), "saap-deadletter-") {
				own[k] = v
			}
		}
		own.Set(HeaderDeadLetterDropped, strconv.Itoa(size-own.wireSize()))
		h = own
	}
	return &Msg{Subject: letter.Subject, Header: h}
}

// oneLine keeps a reason usable as a header value.
func oneLine(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if s == "" {
		s = "unspecified"
	}
	const maxLen = 1024
	if len(s) > maxLen {
		s = s[:maxLen]
	}
	return s
}

// HandBack gives back a delivery that was not handled, for another one at
// once: a nak. At its last delivery under maxDeliver (≤ 0: no limit) a nak
// would end it, as a server delivers a message no more than MaxDeliver
// times, so it is dead-lettered instead, the reason saying who stopped
// (stopped, e.g. "the runner stopped"); lettered reports that. ctx bounds
// the dead letter.
func HandBack(ctx context.Context, d Delivery, maxDeliver int, stopped string) (lettered bool, err error) {
	n := d.NumDelivered()
	if maxDeliver <= 0 || n < uint64(maxDeliver) {
		return false, d.Nak(0)
	}
	return true, d.DeadLetter(ctx, fmt.Sprintf("%s before handling the message's last delivery (%d of MaxDeliver %d)", stopped, n, maxDeliver))
}

// HandBackTimeout bounds the dead letter of a HandBack made on stopping,
// when no caller's context applies.
const HandBackTimeout = 5 * time.Second

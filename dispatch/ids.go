package dispatch

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/saap-go/agent/event"
)

// binding identifies one execution: the digest of (class, run, step, sorted
// bound control event ids) and the newest ObjectId time among the inputs.
type binding struct {
	digest [sha256.Size]byte
	key    string // claim key: hex of the first 16 bytes of digest
	secs   uint32 // newest ObjectId seconds among the inputs, 0 if none
}

// bindingOf computes the binding of ids (which it sorts in place).
func bindingOf(class, run, stepName string, ids []string) binding {
	slices.Sort(ids)
	h := sha256.New()
	var buf [8]byte
	writeField := func(s string) {
		binary.BigEndian.PutUint64(buf[:], uint64(len(s)))
		h.Write(buf[:])
		h.Write([]byte(s))
	}
	writeField(class)
	writeField(run)
	writeField(stepName)
	var secs uint32
	for _, id := range ids {
		writeField(id)
		if s, ok := objectIDSeconds(id); ok && s > secs {
			secs = s
		}
	}
	var b binding
	h.Sum(b.digest[:0])
	b.key = hex.EncodeToString(b.digest[:16])
	b.secs = secs
	return b
}

// objectIDSeconds returns the time prefix of a 24 lower-hex id.
func objectIDSeconds(id string) (uint32, bool) {
	if len(id) != 24 {
		return 0, false
	}
	var v uint32
	for i := 0; i < 24; i++ {
		c := id[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		default:
			return 0, false
		}
		if i < 8 {
			v = v<<4 | uint32(d)
		}
	}
	return v, true
}

// id derives the deterministic event id of an output of this execution
// (D1, D12: 24 lower-hex). label separates kinds of outputs ("out",
// "exception", "emit") and n numbers them.
func (b *binding) id(label string, n int) string {
	h := sha256.New()
	h.Write(b.digest[:])
	h.Write([]byte(label))
	var nb [20]byte
	h.Write(strconv.AppendInt(nb[:0], int64(n), 10))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	var raw [12]byte
	if b.secs != 0 {
		binary.BigEndian.PutUint32(raw[:4], b.secs)
		copy(raw[4:], sum[:8])
	} else {
		copy(raw[:], sum[:12])
	}
	return hex.EncodeToString(raw[:])
}

// idempotencyKey is the key steps get from Context.IdempotencyKey.
func idempotencyKey(class, run, stepName, key string) string {
	return class + "/" + run + "/" + stepName + "/" + key
}

// eventIDs appends the ids of events to dst.
func eventIDs(dst []string, events []event.Event) []string {
	for _, e := range events {
		dst = append(dst, e.EventBase().EventID)
	}
	return dst
}

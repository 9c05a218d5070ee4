package engine

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
	secret []byte // the run's secret (from its identity); keys the output ids
}

// bindingOf computes the binding of ids (which it may reorder).
func bindingOf(class, run, stepName string, ids []string) binding {
	var bb [512]byte
	buf := bb[:0]
	size := 24 + len(class) + len(run) + len(stepName)
	for _, id := range ids {
		size += 8 + len(id)
	}
	if size > len(bb) {
		buf = make([]byte, 0, size)
	}
	buf = appendField(buf, class)
	buf = appendField(buf, run)
	buf = appendField(buf, stepName)
	var secs uint32
	var kb [16]oid
	keys, ok := parseOIDs(kb[:0], ids)
	if ok {
		// ObjectId-shaped ids sort as numbers: the same order as their
		// lower-hex strings, several times faster than comparing strings.
		slices.SortFunc(keys, func(a, b oid) int {
			if a.hi != b.hi {
				return cmpU64(a.hi, b.hi)
			}
			return cmpU64(uint64(a.lo), uint64(b.lo))
		})
		for _, k := range keys {
			secs = max(secs, uint32(k.hi>>32))
			buf = appendField(buf, ids[k.idx])
		}
	} else {
		slices.Sort(ids)
		for _, id := range ids {
			buf = appendField(buf, id)
			if s, ok := objectIDSeconds(id); ok && s > secs {
				secs = s
			}
		}
	}
	var b binding
	b.digest = sha256.Sum256(buf)
	b.key = hex.EncodeToString(b.digest[:16])
	b.secs = secs
	return b
}

func appendField(buf []byte, s string) []byte {
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(s)))
	return append(buf, s...)
}

// oid is a 24 lower-hex id as a number.
type oid struct {
	hi  uint64 // bytes 0–7 (the first 4 are the ObjectId time)
	lo  uint32 // bytes 8–11
	idx int32  // index of the id's string
}

// parseOIDs appends the oids of ids to dst; false if one is not a 24
// lower-hex id.
func parseOIDs(dst []oid, ids []string) ([]oid, bool) {
	if cap(dst) < len(ids) {
		dst = make([]oid, 0, len(ids))
	}
	for j, id := range ids {
		if len(id) != 24 {
			return nil, false
		}
		k := oid{idx: int32(j)}
		for i := 0; i < 24; i++ {
			d, ok := unhex(id[i])
			if !ok {
				return nil, false
			}
			if i < 16 {
				k.hi = k.hi<<4 | uint64(d)
			} else {
				k.lo = k.lo<<4 | uint32(d)
			}
		}
		dst = append(dst, k)
	}
	return dst, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
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
// (24 lower-hex, like an ObjectId). label separates kinds of outputs ("out",
// "exception", "emit") and n numbers them. The hash is keyed with the run's
// secret, recorded at its start: the same inputs give the same id on any
// replica and after a crash, but nobody who sees the inputs can compute it.
// The id shows 8 of the hash's 32 bytes, so the secret prefix leaves no room
// for a length extension.
func (b *binding) id(label string, n int) string {
	var bb [128]byte
	buf := append(bb[:0], b.secret...)
	buf = append(buf, b.digest[:]...)
	buf = append(buf, label...)
	buf = strconv.AppendInt(buf, int64(n), 10)
	sum := sha256.Sum256(buf)
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

package event

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
)

// Id layout (12 bytes, 24 lower-hex characters, ObjectId-compatible):
//
//	4 bytes  Unix seconds, big endian (ObjectId's generation time)
//	8 bytes  from crypto/rand
//
// Ids sort by creation time to the second. Within a second their order is
// random: 64 random bits leave nothing to guess from an id seen before, which
// a millisecond field or a counter would give away (ids name threads and
// runs, so guessing one is reaching into someone else's conversation).
var ids struct {
	sync.Mutex
	buf [1024]byte // random bytes, refilled when used up
	off int
}

func init() { ids.off = len(ids.buf) }

// NewID returns a new event id: 24 lower-hex characters, sortable by
// creation time to the second, with 64 random bits (D12).
func NewID() string {
	var b [12]byte
	binary.BigEndian.PutUint32(b[0:4], uint32(time.Now().Unix()))
	ids.Lock()
	if ids.off+8 > len(ids.buf) {
		_, _ = rand.Read(ids.buf[:]) // never fails: it crashes the program instead
		ids.off = 0
	}
	copy(b[4:], ids.buf[ids.off:ids.off+8])
	ids.off += 8
	ids.Unlock()
	return hex.EncodeToString(b[:])
}

// IDTime returns the time embedded in an ObjectId-shaped id (24 hex
// characters), at seconds precision, and false for any other id.
func IDTime(id string) (time.Time, bool) {
	if !IsObjectID(id) {
		return time.Time{}, false
	}
	var b [4]byte
	if _, err := hex.Decode(b[:], []byte(id[:8])); err != nil {
		return time.Time{}, false
	}
	return time.Unix(int64(binary.BigEndian.Uint32(b[:])), 0).UTC(), true
}

// IsObjectID reports whether id matches ^[a-f0-9]{24}$, the form the
// platform validates thread and display ids against.
func IsObjectID(id string) bool {
	if len(id) != 24 {
		return false
	}
	for i := range len(id) {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Stamp fills an empty EventID with NewID() and a zero CreatedAt with the
// current time, and returns e.
func Stamp(e Event) Event {
	b := e.EventBase()
	if b.EventID == "" {
		b.EventID = NewID()
	}
	if b.CreatedAt == 0 {
		b.CreatedAt = time.Now().UnixNano()
	}
	return e
}

// New returns a new *T with the defaults the reference declares applied
// (ChunkEvent.ModelName "aihub", ExceptionEvent.HTTPStatusCode 500, empty
// lists where the default is []), its default display texts, a new id and
// the current time. T must be registered.
func New[T any, PT interface {
	*T
	Event
}]() PT {
	p := PT(new(T))
	t, ok := TypeOf(p)
	if !ok {
		return p
	}
	v := valueOf(p).Elem()
	for i := range t.plan.fields {
		f := &t.plan.fields[i]
		if f.def == nil {
			continue
		}
		d := decoder{data: f.def}
		_ = f.c.dec(&d, v.FieldByIndex(f.index)) // defaults were checked at registration
	}
	if t.display != nil {
		fillDisplay(t, v, nil)
	}
	Stamp(p)
	return p
}

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
//	2 bytes  milliseconds within the second
//	6 bytes  per-process random start + monotonic counter
//
// Ids of one process are strictly increasing; ids of different processes
// sort by creation time to the millisecond.
var ids struct {
	sync.Mutex
	last    int64  // last millisecond used
	counter uint64 // 48-bit counter, random start
}

func init() {
	var b [8]byte
	_, _ = rand.Read(b[:])
	ids.counter = binary.BigEndian.Uint64(b[:]) & (1<<48 - 1)
}

// NewID returns a new event id: 24 lower-hex characters, unique across
// processes and sortable by creation time to the millisecond (D12).
func NewID() string {
	ms := time.Now().UnixMilli()
	ids.Lock()
	if ms < ids.last {
		ms = ids.last // the clock went back: stay monotonic
	}
	ids.last = ms
	ids.counter = (ids.counter + 1) & (1<<48 - 1)
	c := ids.counter
	ids.Unlock()
	var b [12]byte
	binary.BigEndian.PutUint32(b[0:4], uint32(ms/1000))
	binary.BigEndian.PutUint16(b[4:6], uint16(ms%1000))
	b[6], b[7], b[8], b[9], b[10], b[11] = byte(c>>40), byte(c>>32), byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
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
		def := f.def
		if def == nil && f.fill != nil {
			def = f.zero // a reply topic (WithReply)
		}
		if def == nil {
			continue
		}
		d := decoder{data: def}
		_ = f.c.dec(&d, v.FieldByIndex(f.index)) // defaults were checked at registration
	}
	if t.display != nil {
		fillDisplay(t, v, nil)
	}
	Stamp(p)
	return p
}

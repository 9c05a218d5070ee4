package memory

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/saap-go/agent/bus"
)

type stream struct {
	cfg       bus.StreamConfig
	msgs      []stored // ascending seq
	last      uint64
	ids       map[string]dedupe
	subjects  map[string]uint64 // subject → sequence of its newest stored message
	pruned    time.Time
	consumers map[string]*consumer
	order     []*consumer // consumers sorted by durable name: the fill order
}

// addConsumer registers c under its durable name. b.mu is held.
func (st *stream) addConsumer(c *consumer) {
	st.consumers[c.cfg.Durable] = c
	st.sortConsumers()
}

// removeConsumer forgets the durable. b.mu is held.
func (st *stream) removeConsumer(durable string) {
	delete(st.consumers, durable)
	st.sortConsumers()
}

func (st *stream) sortConsumers() {
	st.order = st.order[:0]
	for _, name := range sortedKeys(st.consumers) {
		st.order = append(st.order, st.consumers[name])
	}
}

type stored struct {
	seq uint64
	msg *bus.Msg
	at  time.Time
}

type dedupe struct {
	seq uint64
	at  time.Time
}

// trim applies MaxAge and MaxMsgs (discard old). b.mu is held.
func (st *stream) trim(now time.Time) {
	drop := 0
	if st.cfg.MaxAge > 0 {
		cut := now.Add(-st.cfg.MaxAge)
		for drop < len(st.msgs) && !st.msgs[drop].at.After(cut) {
			drop++
		}
	}
	if st.cfg.MaxMsgs > 0 && int64(len(st.msgs)-drop) > st.cfg.MaxMsgs {
		drop = len(st.msgs) - int(st.cfg.MaxMsgs)
	}
	if drop > 0 {
		for _, m := range st.msgs[:drop] {
			if st.subjects[m.msg.Subject] == m.seq {
				delete(st.subjects, m.msg.Subject)
			}
		}
		clear(st.msgs[:drop])
		st.msgs = st.msgs[drop:]
	}
}

// find returns the stored message with sequence seq, or nil. The pointer
// is valid until the stream changes (b.mu is held).
func (st *stream) find(seq uint64) *stored {
	i := sort.Search(len(st.msgs), func(i int) bool { return st.msgs[i].seq >= seq })
	if i < len(st.msgs) && st.msgs[i].seq == seq {
		return &st.msgs[i]
	}
	return nil
}

// next returns the first stored message with sequence ≥ seq matching
// filter ("" matches all), or nil.
func (st *stream) next(seq uint64, filter string) *stored {
	i := sort.Search(len(st.msgs), func(i int) bool { return st.msgs[i].seq >= seq })
	for ; i < len(st.msgs); i++ {
		if filter == "" || bus.Match(filter, st.msgs[i].msg.Subject) {
			return &st.msgs[i]
		}
	}
	return nil
}

func (st *stream) captures(subject string) bool {
	for _, p := range st.cfg.Subjects {
		if bus.Match(p, subject) {
			return true
		}
	}
	return false
}

// overlap reports whether some subject matches both patterns.
func overlap(a, b string) bool {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(at) && i < len(bt); i++ {
		if at[i] == ">" || bt[i] == ">" {
			return true
		}
		if at[i] != "*" && bt[i] != "*" && at[i] != bt[i] {
			return false
		}
	}
	return len(at) == len(bt)
}

// EnsureStream creates the stream unless one of that name exists; see
// bus.Streams. Like JetStream it refuses subjects that overlap another
// stream's.
func (b *Bus) EnsureStream(ctx context.Context, cfg bus.StreamConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return bus.ErrClosed
	}
	if _, ok := b.streams[cfg.Name]; ok {
		return nil
	}
	for _, other := range b.streams {
		for _, p := range other.cfg.Subjects {
			for _, q := range cfg.Subjects {
				if overlap(p, q) {
					return fmt.Errorf("bus: stream %q: subject %q overlaps %q of stream %q", cfg.Name, q, p, other.cfg.Name)
				}
			}
		}
	}
	cfg.Subjects = append([]string(nil), cfg.Subjects...)
	if cfg.Duplicates <= 0 {
		cfg.Duplicates = 2 * time.Minute // the nats-server default
	}
	if cfg.MaxMsgs == 0 {
		cfg.MaxMsgs = -1 // unlimited, reported as a server reports it
	}
	b.streams[cfg.Name] = &stream{cfg: cfg, ids: map[string]dedupe{}, subjects: map[string]uint64{}, consumers: map[string]*consumer{}}
	b.sortStreams()
	return nil
}

// StreamInfo returns the stream's configuration and state; see bus.Streams.
func (b *Bus) StreamInfo(ctx context.Context, name string) (*bus.StreamInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st, err := b.trimmed(name)
	if err != nil {
		return nil, err
	}
	info := &bus.StreamInfo{Config: st.cfg, Msgs: uint64(len(st.msgs)), FirstSeq: st.last + 1, LastSeq: st.last}
	info.Config.Subjects = append([]string(nil), st.cfg.Subjects...)
	if len(st.msgs) > 0 {
		info.FirstSeq = st.msgs[0].seq
	}
	return info, nil
}

// stream returns the named stream. b.mu is held.
func (b *Bus) stream(name string) (*stream, error) {
	if b.closed {
		return nil, bus.ErrClosed
	}
	st, ok := b.streams[name]
	if !ok {
		return nil, fmt.Errorf("stream %q: %w", name, bus.ErrNotFound)
	}
	return st, nil
}

// trimmed returns the named stream with its limits applied as of now, for
// reading. b.mu is held.
func (b *Bus) trimmed(name string) (*stream, error) {
	st, err := b.stream(name)
	if err != nil {
		return nil, err
	}
	st.trim(b.clock.Now())
	return st, nil
}

// DeleteStream removes the stream and its consumers; see bus.Streams.
func (b *Bus) DeleteStream(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st, err := b.stream(name)
	if err != nil {
		return err
	}
	for _, c := range st.consumers {
		c.shutdown()
	}
	delete(b.streams, name)
	b.sortStreams()
	return nil
}

// PublishStream stores m in the stream that captures its subject and
// delivers it to matching core subscriptions; see bus.StreamPublisher. A
// subject no stream captures fails at once with bus.ErrNoResponders.
func (b *Bus) PublishStream(ctx context.Context, m *bus.Msg, msgID string) (bus.PubAck, error) {
	return b.publishStream(ctx, m, msgID, false)
}

// PublishNew is PublishStream that stores nothing when the stream holds a
// message on m.Subject; see bus.StreamPublisher.
func (b *Bus) PublishNew(ctx context.Context, m *bus.Msg, msgID string) (bus.PubAck, error) {
	return b.publishStream(ctx, m, msgID, true)
}

func (b *Bus) publishStream(ctx context.Context, m *bus.Msg, msgID string, fresh bool) (bus.PubAck, error) {
	if m == nil {
		return bus.PubAck{}, bus.CheckMsg(m, b.opts.MaxPayload)
	}
	// The one copy of the message: stored, and shared by every delivery.
	c := copyMsg(m, msgID)
	if err := bus.CheckMsg(c, b.opts.MaxPayload); err != nil {
		return bus.PubAck{}, err
	}
	m, err := b.ready(ctx, c)
	if err != nil {
		return bus.PubAck{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return bus.PubAck{}, bus.ErrClosed
	}
	var st *stream
	for _, x := range b.order {
		if x.captures(m.Subject) {
			st = x
			break
		}
	}
	if st == nil {
		return bus.PubAck{}, fmt.Errorf("no stream captures %q: %w", m.Subject, bus.ErrNoResponders)
	}
	m.Reply = ""
	now := b.clock.Now()
	b.routeCore(m)
	if fresh {
		if seq, ok := st.subjects[m.Subject]; ok {
			return bus.PubAck{Stream: st.cfg.Name, Seq: seq, Duplicate: true}, nil
		}
	}
	if msgID != "" {
		if d, ok := st.ids[msgID]; ok && now.Sub(d.at) < st.cfg.Duplicates {
			return bus.PubAck{Stream: st.cfg.Name, Seq: d.seq, Duplicate: true}, nil
		}
	}
	st.last++
	st.msgs = append(st.msgs, stored{seq: st.last, msg: m, at: now})
	st.subjects[m.Subject] = st.last
	if msgID != "" {
		st.ids[msgID] = dedupe{seq: st.last, at: now}
		st.pruneIDs(now)
	}
	st.trim(now)
	for _, c := range st.order {
		b.fill(c)
	}
	return bus.PubAck{Stream: st.cfg.Name, Seq: st.last}, nil
}

func (st *stream) pruneIDs(now time.Time) {
	if len(st.ids) < 1024 || now.Sub(st.pruned) < st.cfg.Duplicates {
		return
	}
	st.pruned = now
	for id, d := range st.ids {
		if now.Sub(d.at) >= st.cfg.Duplicates {
			delete(st.ids, id)
		}
	}
}

// sortStreams rebuilds the capture order after a stream came or went.
// b.mu is held.
func (b *Bus) sortStreams() {
	b.order = b.order[:0]
	for _, name := range sortedKeys(b.streams) {
		b.order = append(b.order, b.streams[name])
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// HasSubject reports whether the stream holds a message on exactly
// subject; see bus.Streams.
func (b *Bus) HasSubject(ctx context.Context, name, subject string) (bool, error) {
	if err := bus.ValidateSubject(subject); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st, err := b.trimmed(name)
	if err != nil {
		return false, err
	}
	_, ok := st.subjects[subject]
	return ok, nil
}

// NextMsg returns the first message with sequence ≥ seq matching filter; see
// bus.Streams.
func (b *Bus) NextMsg(ctx context.Context, name, filter string, seq uint64) (*bus.StoredMsg, error) {
	if filter != "" {
		if err := bus.ValidatePattern(filter); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st, err := b.trimmed(name)
	if err != nil {
		return nil, err
	}
	s := st.next(max(seq, 1), filter)
	if s == nil {
		return nil, fmt.Errorf("stream %q: no message matching %q from sequence %d: %w", name, filter, seq, bus.ErrNotFound)
	}
	return &bus.StoredMsg{Msg: *s.msg, Seq: s.seq, Time: s.at}, nil // header and data shared, read-only
}

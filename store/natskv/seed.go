package natskv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/saap-go/agent/store"

	"github.com/nats-io/nats.go/jetstream"
)

// A run's seed is the first batch written to its run context (a start
// event's configuration and fields), kept as one key instead of one key per
// entry: a run's start costs one write, not ten.
//
//	r.<class>.<run>.y   the seed: every entry of the first batch
//
// The seed is created once and never changed, so this process keeps the
// seeds it wrote or read. Every later write goes to the entry's own key
// (r.<class>.<run>.x.<key>), and of an entry's own key and the seed, the
// one with the higher revision holds the entry's value: a later batch in
// the same run, a Set, a Delete or an Incr of a seeded entry all win over
// the seed.

func seedKey(class, run string) string { return runPrefix(class, run) + "y" }

// seed is a decoded seed and its revision.
type seed struct {
	rev  uint64
	vals map[string][]byte
}

// encodeSeed lays out entries as (key length, key, value length, value),
// lengths as uvarints; a later entry with the same key wins on decoding.
// It also returns the entries as decoding would, their values in the
// encoded bytes.
func encodeSeed(entries []store.Entry) ([]byte, map[string][]byte) {
	n := 0
	for _, en := range entries {
		n += 2*binary.MaxVarintLen64 + len(en.Key) + len(en.Value)
	}
	b := make([]byte, 0, n) // never grown: the values below stay in it
	vals := make(map[string][]byte, len(entries))
	for _, en := range entries {
		b = binary.AppendUvarint(b, uint64(len(en.Key)))
		b = append(b, en.Key...)
		b = binary.AppendUvarint(b, uint64(len(en.Value)))
		b = append(b, en.Value...)
		vals[en.Key] = b[len(b)-len(en.Value) : len(b) : len(b)]
	}
	return b, vals
}

func decodeSeed(b []byte) (map[string][]byte, error) {
	vals := make(map[string][]byte)
	for len(b) > 0 {
		k, rest, err := seedField(b)
		if err != nil {
			return nil, err
		}
		v, rest, err := seedField(rest)
		if err != nil {
			return nil, err
		}
		vals[string(k)] = slices.Clip(v)
		b = rest
	}
	return vals, nil
}

func seedField(b []byte) (field, rest []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, nil, errors.New("kvstore: a run's seed does not decode")
	}
	return b[w : w+int(n)], b[w+int(n):], nil
}

// writeSeed creates the run's seed from entries; false if the run has one.
func (s *Store) writeSeed(ctx context.Context, run store.RunKey, entries []store.Entry) (bool, error) {
	raw, vals := encodeSeed(entries)
	rev, err := s.state.Create(ctx, seedKey(run.Class, run.Run), raw)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kvstore: seed run context of %s/%s: %w", run.Class, run.Run, err)
	}
	s.seeds.put(run, &seed{rev: rev, vals: vals})
	return true, nil
}

// readSeed returns the run's seed, nil if it has none.
func (s *Store) readSeed(ctx context.Context, run store.RunKey) (*seed, error) {
	if sd, ok := s.seeds.get(run); ok {
		return sd, nil
	}
	e, err := s.state.Get(ctx, seedKey(run.Class, run.Run))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kvstore: read seed of run %s/%s: %w", run.Class, run.Run, err)
	}
	vals, err := decodeSeed(e.Value())
	if err != nil {
		return nil, err
	}
	sd := &seed{rev: e.Revision(), vals: vals}
	s.seeds.put(run, sd)
	return sd, nil
}

// runGet reads an entry of a run context: its own key, or the seed's value
// when the seed is newer (see seed). ownRev is the revision of the entry's
// own key if it holds a value (0 if not), for a compare-and-set of it.
func (s *Store) runGet(ctx context.Context, run store.RunKey, k, key string) ([]byte, uint64, bool, error) {
	var sd *seed
	var sdErr error
	e, err := func() (jetstream.KeyValueEntry, error) {
		if sd, _ = s.seeds.get(run); sd != nil {
			return s.state.Get(ctx, k)
		}
		var wg sync.WaitGroup
		wg.Go(func() { sd, sdErr = s.readSeed(ctx, run) })
		e, err := s.state.Get(ctx, k)
		wg.Wait()
		return e, err
	}()
	if sdErr != nil {
		return nil, 0, false, sdErr
	}
	own := err == nil
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, false, fmt.Errorf("kvstore: get %q: %w", key, err)
	}
	v, seeded := []byte(nil), false
	if sd != nil {
		v, seeded = sd.vals[key]
	}
	var ownRev uint64
	if own {
		ownRev = e.Revision()
	}
	switch {
	case own && (!seeded || ownRev > sd.rev):
		return slices.Clone(e.Value()), ownRev, true, nil
	case !seeded:
		return nil, 0, false, nil
	case !own:
		// Deleted after the seed, or never written on its own.
		deleted, err := s.deletedAfter(ctx, k, sd.rev)
		if err != nil || deleted {
			return nil, 0, false, err
		}
	}
	return slices.Clone(v), ownRev, true, nil
}

// deletedAfter reports whether key k's last write is a delete with a
// revision above rev.
func (s *Store) deletedAfter(ctx context.Context, k string, rev uint64) (bool, error) {
	m, err := s.stateStream.GetLastMsgForSubject(ctx, "$KV."+s.state.Bucket()+"."+k)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kvstore: read %q: %w", k, err)
	}
	switch m.Header.Get("KV-Operation") {
	case "DEL", "PURGE":
		return m.Sequence > rev, nil
	}
	return false, nil
}

// seededKeys adds to keys the seed's entries that no later delete removed;
// deleted maps each deleted own key to the revision of its delete.
func seededKeys(keys []string, sd *seed, deleted map[string]uint64) []string {
	if sd == nil {
		return keys
	}
	for k := range sd.vals {
		if rev, ok := deleted[k]; ok && rev > sd.rev {
			continue
		}
		keys = append(keys, k)
	}
	return keys
}

package natskv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/saap-go/agent/store"

	"github.com/nats-io/nats.go/jetstream"
)

// Status records live in the state bucket, so they expire with its TTL:
//
//	s.<class>.<run>            status record of a run
//	h.<class>.<thread>.<run>   thread index entry (empty value)
//
// The record is written at every transition and expires TTL after the
// run's last one. The index entry is written with the first transition
// this process records for the run (again after a restart, or once the
// process has recorded many other runs since), so it expires TTL after
// about the run's start: a run that lives longer than the bucket's TTL
// drops out of its thread's listing before its record goes.

var _ store.Statuses = (*Store)(nil)

func statusKey(class, run string) string { return "s." + escape(class) + "." + escape(run) }

func statusThreadKey(class, thread, run string) string {
	return "h." + escape(class) + "." + escape(thread) + "." + escape(run)
}

// PutStatus implements store.Statuses: the record and the thread
// index entry are written concurrently, in about one round trip.
func (s *Store) PutStatus(ctx context.Context, run store.RunKey, thread string, value []byte) error {
	if err := checkRun(run); err != nil {
		return err
	}
	if thread == "" {
		return errors.New("kvstore: a status record needs a thread")
	}
	idx := statusThreadKey(run.Class, thread, run.Run)
	var idxErr error
	var wg sync.WaitGroup
	if _, done := s.idx.get(idx); !done {
		wg.Go(func() {
			if _, idxErr = s.state.Put(ctx, idx, nil); idxErr == nil {
				s.idx.put(idx, struct{}{})
			}
		})
	}
	_, err := s.state.Put(ctx, statusKey(run.Class, run.Run), value)
	wg.Wait()
	if err = errors.Join(err, idxErr); err != nil {
		return fmt.Errorf("kvstore: put status of run %s/%s: %w", run.Class, run.Run, err)
	}
	return nil
}

// Status implements store.Statuses.
func (s *Store) Status(ctx context.Context, run store.RunKey) ([]byte, bool, error) {
	if err := checkRun(run); err != nil {
		return nil, false, err
	}
	e, err := s.state.Get(ctx, statusKey(run.Class, run.Run))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("kvstore: status of run %s/%s: %w", run.Class, run.Run, err)
	}
	return slices.Clone(e.Value()), true, nil
}

// ListStatus implements store.Statuses. It lists the keys of the
// class (or thread) once, then reads the page's records concurrently.
func (s *Store) ListStatus(ctx context.Context, class, thread, after string, limit int) ([]store.StatusEntry, error) {
	if class == "" {
		return nil, errors.New("kvstore: listing status records needs a class")
	}
	prefix := "s." + escape(class) + "."
	if thread != "" {
		prefix = "h." + escape(class) + "." + escape(thread) + "."
	}
	names, err := listKeys(ctx, s.state, prefix+"*")
	if err != nil {
		return nil, fmt.Errorf("kvstore: listing status records of %s: %w", class, err)
	}
	runs := make([]string, 0, len(names))
	for _, n := range names {
		r, err := unescape(strings.TrimPrefix(n, prefix))
		if err != nil {
			return nil, fmt.Errorf("kvstore: key %q: %w", n, err)
		}
		if r > after {
			runs = append(runs, r)
		}
	}
	slices.Sort(runs)
	runs = slices.Compact(runs)
	if limit > 0 && len(runs) > limit {
		runs = runs[:limit]
	}
	vals := make([][]byte, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			e, err := s.state.Get(ctx, statusKey(class, r))
			switch {
			case errors.Is(err, jetstream.ErrKeyNotFound): // expired since listed
			case err != nil:
				errs[i] = err
			default:
				vals[i] = slices.Clone(e.Value())
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("kvstore: reading status records of %s: %w", class, err)
	}
	out := make([]store.StatusEntry, 0, len(runs))
	for i, r := range runs {
		if vals[i] != nil {
			out = append(out, store.StatusEntry{Run: r, Value: vals[i]})
		}
	}
	return out, nil
}

package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/saap-go/agent/store"
	"github.com/saap-go/agent/topic"
)

// Schedule says when one profile (an agent class and agent id) runs.
type Schedule struct {
	Class   string `json:"agent_class"`
	AgentID string `json:"agent_id"`
	Cron    Cron   `json:"cron"`
}

// Validate checks the class and agent id as subject tokens and the cron.
func (s Schedule) Validate() error {
	if err := topic.ValidateToken("agent_class", s.Class); err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	if err := topic.ValidateToken("agent_id", s.AgentID); err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	if err := s.Cron.Validate(); err != nil {
		return fmt.Errorf("schedule %s/%s: %w", s.Class, s.AgentID, err)
	}
	return nil
}

// key names the schedule in the store; a dot cannot occur in either token.
func (s Schedule) key() string { return s.Class + "." + s.AgentID }

// A Source lists the schedules a Scheduler fires. It is asked once per
// tick; an invalid schedule in its answer is logged and skipped, never
// allowed to stop the others. A Source may return schedules together with
// an error about entries it could not read: the scheduler fires the
// schedules and logs the error (an error with no schedules fails the tick).
type Source interface {
	Schedules(ctx context.Context) ([]Schedule, error)
}

// List is a fixed Source.
type List []Schedule

// Schedules returns l.
func (l List) Schedules(context.Context) ([]Schedule, error) { return l, nil }

// ConfigKey is the key of a profile's configuration that holds its
// schedule, a base field of every schedulable class's form.
const ConfigKey = "cron"

// FromConfig reads the schedule of profile (class, agentID) from its
// stored configuration (the config RPC's "config" object). It returns
// false when the profile has no schedule (no "cron" key, or null), and an
// error when the schedule is malformed.
func FromConfig(class, agentID string, config json.RawMessage) (Schedule, bool, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(config, &fields); err != nil {
		return Schedule{}, false, fmt.Errorf("schedule: configuration of %s/%s is not a JSON object: %w", class, agentID, err)
	}
	raw, ok := fields[ConfigKey]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return Schedule{}, false, nil
	}
	s := Schedule{Class: class, AgentID: agentID}
	if err := json.Unmarshal(raw, &s.Cron); err != nil {
		return Schedule{}, false, fmt.Errorf("schedule: %s/%s: %w", class, agentID, err)
	}
	if err := s.Validate(); err != nil {
		return Schedule{}, false, err
	}
	return s, true, nil
}

// StoreSource keeps schedules in a state store (in a thread context, which
// does not expire), so that whatever edits profiles can keep their
// schedules there and every scheduler replica reads the same list.
type StoreSource struct {
	st    store.Contexts
	scope store.Scope
}

// NewStoreSource returns the source of the schedules named name ("" for
// "default") in st.
func NewStoreSource(st store.Contexts, name string) *StoreSource {
	if name == "" {
		name = "default"
	}
	return &StoreSource{st: st, scope: store.ThreadContext(namespace(name), "schedules")}
}

// Put adds or replaces the schedule of s's profile, after checking it.
func (s *StoreSource) Put(ctx context.Context, sc Schedule) error {
	if err := sc.Validate(); err != nil {
		return err
	}
	data, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	return s.st.Set(ctx, s.scope, sc.key(), data)
}

// PutConfig keeps the schedule of a profile from its stored
// configuration, as FromConfig reads it: a profile whose configuration has
// no schedule (any more) has its schedule deleted. Call it whenever a
// profile is saved, and Delete when it is removed.
func (s *StoreSource) PutConfig(ctx context.Context, class, agentID string, config json.RawMessage) error {
	sc, ok, err := FromConfig(class, agentID, config)
	if err != nil {
		return err
	}
	if !ok {
		return s.Delete(ctx, class, agentID)
	}
	return s.Put(ctx, sc)
}

// Delete removes the schedule of profile (class, agentID); an absent one is
// not an error.
func (s *StoreSource) Delete(ctx context.Context, class, agentID string) error {
	return s.st.Delete(ctx, s.scope, Schedule{Class: class, AgentID: agentID}.key())
}

// Schedules returns the stored schedules, ordered by class and agent id. A
// stored value that does not decode is skipped with an error joined to the
// result, so one bad entry cannot hide the others.
func (s *StoreSource) Schedules(ctx context.Context) ([]Schedule, error) {
	keys, err := s.st.Keys(ctx, s.scope)
	if err != nil {
		return nil, err
	}
	out := make([]Schedule, 0, len(keys))
	var bad []error
	for _, k := range keys {
		data, ok, err := s.st.Get(ctx, s.scope, k)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // deleted since Keys
		}
		var sc Schedule
		if err := json.Unmarshal(data, &sc); err != nil {
			bad = append(bad, fmt.Errorf("schedule %s: %w", k, err))
			continue
		}
		out = append(out, sc)
	}
	return out, errors.Join(bad...)
}

// namespace is the store class all of a scheduler's state is kept under: a
// dot cannot occur in an agent class, so it never meets an agent's state.
func namespace(name string) string { return "saap.scheduler." + strings.TrimSpace(name) }

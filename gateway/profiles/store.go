package profiles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/internal/jsfault"

	"github.com/saap-go/agent/schedule"
	"github.com/saap-go/agent/topic"
)

// DefaultBucket is the JetStream key-value bucket NewStore uses unless told
// otherwise.
const DefaultBucket = "saap_profiles"

// Errors callers branch on; the admin routes answer them with 404, 409 and
// 409.
var (
	ErrNotFound = errors.New("profiles: no such profile")
	ErrExists   = errors.New("profiles: the profile exists already")
	// ErrConflict: the profile changed since the revision the caller read.
	ErrConflict = errors.New("profiles: the profile was changed in between (revision mismatch); read it again and reapply the change")
)

// Profile is one agent instance's stored configuration: what the config
// RPC answers for (Class, AgentID).
type Profile struct {
	Class   string `json:"agent_class"`
	AgentID string `json:"agent_id"`
	// Config is the profile's configuration object, base fields (agent_id,
	// name, description, icon, cron) included, as the agent receives it.
	Config json.RawMessage `json:"config"`
	// Revision is the profile's revision in the bucket; an update must
	// name the revision it was made from.
	Revision uint64 `json:"revision"`
	// Updated and UpdatedBy say when and by whom (a user id) it was saved.
	Updated   time.Time `json:"updated_at"`
	UpdatedBy string    `json:"updated_by,omitempty"`
}

// record is a profile's value in the bucket.
type record struct {
	Config    json.RawMessage `json:"config"`
	Updated   time.Time       `json:"updated_at"`
	UpdatedBy string          `json:"updated_by,omitempty"`
}

// StoreConfig configures NewStore. The zero value is usable.
type StoreConfig struct {
	// Bucket is the key-value bucket's name. Default DefaultBucket.
	Bucket string
	// Replicas and Storage apply when the store creates the bucket.
	// Default 1 replica, file storage.
	Replicas int
	Storage  jetstream.StorageType
}

// Store keeps profiles in a JetStream key-value bucket, one key a profile
// (a.<class>.<agent id>), so every gateway replica answers from the same
// profiles. Writes are compare-and-set on the key's revision: of two
// concurrent edits of one profile, the second fails with ErrConflict
// instead of silently undoing the first. Store is a schedule.Source too:
// the schedules are the "cron" fields of the stored profiles.
type Store struct {
	kv  jetstream.KeyValue
	now func() time.Time
}

// NewStore opens the bucket of cfg on js, creating it when it does not
// exist yet.
func NewStore(ctx context.Context, js jetstream.JetStream, cfg StoreConfig) (*Store, error) {
	if js == nil {
		return nil, errors.New("profiles: NewStore needs a JetStream context")
	}
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	kv, err := jsfault.KeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket:      cfg.Bucket,
		Description: "saap-go gateway: agent profiles (the configurations the config RPC answers)",
		History:     1,
		Replicas:    cfg.Replicas,
		Storage:     cfg.Storage,
	})
	if err != nil {
		return nil, fmt.Errorf("profiles: key-value bucket %s: %w", cfg.Bucket, err)
	}
	return &Store{kv: kv, now: time.Now}, nil
}

// keyToken is what a class or agent id may hold to be one key token: the
// subject-token rules, narrowed to the characters a key-value key allows.
var keyToken = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ValidateIDs checks class and agentID as the parts of a profile's key.
func ValidateIDs(class, agentID string) error {
	if err := topic.ValidateToken("agent_class", class); err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	if err := topic.ValidateToken("agent_id", agentID); err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	if !keyToken.MatchString(class) {
		return fmt.Errorf("profiles: agent_class %.80q: only letters, digits, _ and - are allowed", class)
	}
	if !keyToken.MatchString(agentID) {
		return fmt.Errorf("profiles: agent_id %.80q: only letters, digits, _ and - are allowed", agentID)
	}
	return nil
}

func key(class, agentID string) string { return "a." + class + "." + agentID }

// Get returns the profile of (class, agentID), or ErrNotFound.
func (s *Store) Get(ctx context.Context, class, agentID string) (Profile, error) {
	if err := ValidateIDs(class, agentID); err != nil {
		return Profile{}, err
	}
	e, err := s.kv.Get(ctx, key(class, agentID))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return Profile{}, fmt.Errorf("%w: %s/%s", ErrNotFound, class, agentID)
	}
	if err != nil {
		return Profile{}, fmt.Errorf("profiles: get %s/%s: %w", class, agentID, err)
	}
	return decode(class, agentID, e)
}

func decode(class, agentID string, e jetstream.KeyValueEntry) (Profile, error) {
	var r record
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return Profile{}, fmt.Errorf("profiles: stored profile %s/%s does not decode: %w", class, agentID, err)
	}
	return Profile{Class: class, AgentID: agentID, Config: r.Config, Revision: e.Revision(), Updated: r.Updated, UpdatedBy: r.UpdatedBy}, nil
}

func (s *Store) encode(p Profile) (Profile, []byte, error) {
	if err := ValidateIDs(p.Class, p.AgentID); err != nil {
		return p, nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(p.Config, &obj); err != nil || obj == nil {
		return p, nil, fmt.Errorf("profiles: the configuration of %s/%s is not a JSON object", p.Class, p.AgentID)
	}
	p.Updated = s.now().UTC()
	data, err := json.Marshal(record{Config: p.Config, Updated: p.Updated, UpdatedBy: p.UpdatedBy})
	return p, data, err
}

// Create stores p as a new profile and returns it with its revision. It
// fails with ErrExists when the profile exists.
func (s *Store) Create(ctx context.Context, p Profile) (Profile, error) {
	p, data, err := s.encode(p)
	if err != nil {
		return Profile{}, err
	}
	rev, err := s.kv.Create(ctx, key(p.Class, p.AgentID), data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return Profile{}, fmt.Errorf("%w: %s/%s", ErrExists, p.Class, p.AgentID)
	}
	if err != nil {
		return Profile{}, fmt.Errorf("profiles: create %s/%s: %w", p.Class, p.AgentID, err)
	}
	p.Revision = rev
	return p, nil
}

// Update replaces the configuration of profile p if it is still at
// p.Revision, and returns it with its new revision. It fails with
// ErrNotFound when there is no such profile and ErrConflict when it has
// changed since p.Revision.
func (s *Store) Update(ctx context.Context, p Profile) (Profile, error) {
	p, data, err := s.encode(p)
	if err != nil {
		return Profile{}, err
	}
	if p.Revision == 0 {
		return Profile{}, errors.New("profiles: an update needs the revision it was made from")
	}
	rev, err := s.kv.Update(ctx, key(p.Class, p.AgentID), data, p.Revision)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || wrongRevision(err) {
			if _, gerr := s.Get(ctx, p.Class, p.AgentID); errors.Is(gerr, ErrNotFound) {
				return Profile{}, gerr
			}
			return Profile{}, fmt.Errorf("%w: %s/%s is not at revision %d", ErrConflict, p.Class, p.AgentID, p.Revision)
		}
		return Profile{}, fmt.Errorf("profiles: update %s/%s: %w", p.Class, p.AgentID, err)
	}
	p.Revision = rev
	return p, nil
}

// Delete removes the profile of (class, agentID). With a revision other
// than 0 it removes it only if it is still at that revision (else
// ErrConflict). An absent profile is ErrNotFound.
func (s *Store) Delete(ctx context.Context, class, agentID string, revision uint64) error {
	cur, err := s.Get(ctx, class, agentID)
	if err != nil {
		return err
	}
	if revision == 0 {
		revision = cur.Revision
	}
	err = s.kv.Delete(ctx, key(class, agentID), jetstream.LastRevision(revision))
	if wrongRevision(err) {
		return fmt.Errorf("%w: %s/%s is not at revision %d", ErrConflict, class, agentID, revision)
	}
	if err != nil {
		return fmt.Errorf("profiles: delete %s/%s: %w", class, agentID, err)
	}
	return nil
}

// wrongRevision reports the stream's refusal of a compare-and-set.
func wrongRevision(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// List returns the profiles of class ("" for every class), ordered by class
// and agent id. A stored value that does not decode is skipped with an
// error joined to the result, so one bad entry cannot hide the others.
func (s *Store) List(ctx context.Context, class string) ([]Profile, error) {
	filter := "a.>"
	if class != "" {
		if err := ValidateIDs(class, "x"); err != nil {
			return nil, err
		}
		filter = "a." + class + ".*"
	}
	lister, err := s.kv.ListKeysFiltered(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("profiles: list: %w", err)
	}
	var keys []string
	for k := range lister.Keys() { // closed, and the watch stopped, once the keys are in
		keys = append(keys, k)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("profiles: list: %w", err)
	}
	slices.Sort(keys)
	out := make([]Profile, 0, len(keys))
	var bad []error
	for _, k := range keys {
		parts := strings.Split(k, ".")
		if len(parts) != 3 {
			continue
		}
		e, err := s.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("profiles: get %s: %w", k, err)
		}
		p, err := decode(parts[1], parts[2], e)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, p)
	}
	return out, errors.Join(bad...)
}

// Schedules returns the schedules of the stored profiles: the "cron"
// field of each profile that has one (schedule.FromConfig). A scheduler
// given the Store as its Source fires what the admin routes save, with no
// second copy to keep in step. A malformed schedule is skipped with an
// error joined to the result.
func (s *Store) Schedules(ctx context.Context) ([]schedule.Schedule, error) {
	list, err := s.List(ctx, "")
	if err != nil && len(list) == 0 {
		return nil, err
	}
	bad := []error{err}
	var out []schedule.Schedule
	for _, p := range list {
		sc, ok, serr := schedule.FromConfig(p.Class, p.AgentID, p.Config)
		if serr != nil {
			bad = append(bad, serr)
			continue
		}
		if ok {
			out = append(out, sc)
		}
	}
	return out, errors.Join(bad...)
}

var _ schedule.Source = (*Store)(nil)

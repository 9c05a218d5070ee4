package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/vector"
)

// Scope is whose a memory is.
type Scope string

// The two scopes of the reference.
const (
	ScopeUser         Scope = "user"
	ScopeOrganization Scope = "organization"
)

// Errors callers branch on.
var (
	// ErrForbidden is a principal acting on a scope it does not belong to.
	ErrForbidden = errors.New("memory: forbidden")
	// ErrInvalid is bad input: no user, empty text, a namespace outside
	// the allowed ones.
	ErrInvalid = errors.New("memory: invalid input")
)

// Principal is who recalls or stores: a user and the organisations
// (tenant ids) the user acts within.
type Principal struct {
	UserID string
	Orgs   []string
}

// PrincipalOf is the principal of a run's user: its id and, when the user
// acts within a tenant, that tenant. A nil user is the zero Principal,
// which may recall and store nothing.
func PrincipalOf(u *event.UserIdentity) Principal {
	if u == nil {
		return Principal{}
	}
	p := Principal{UserID: u.ID}
	if u.ActingWithinTenant != nil && u.ActingWithinTenant.ID != "" {
		p.Orgs = []string{u.ActingWithinTenant.ID}
	}
	return p
}

func (p Principal) inOrg(tenant string) bool { return tenant != "" && slices.Contains(p.Orgs, tenant) }

// Origin is where a memory was learnt; all fields are optional.
type Origin struct {
	AgentID, ThreadID, DisplayID, RunID string
}

// Item is one memory.
type Item struct {
	ID        string
	Scope     Scope
	Owner     string // user id or tenant id
	Namespace string // organisation memories only
	Text      string
	Origin    Origin
	CreatedAt time.Time
	// Score is the cosine similarity to the query (Recall only).
	Score float32
}

// Query is what Recall looks for.
type Query struct {
	Text string
	// Limit per scope; 0 means the service's (10, as the reference).
	Limit int
	// Threshold drops memories less similar than it; 0 means the
	// service's (0.5, as the reference); negative keeps all.
	Threshold float32
	// Namespaces restricts organisation memories to these namespaces;
	// empty means every namespace the service allows.
	Namespaces []string
}

// Recalled is Recall's answer, one list per scope, closest first.
type Recalled struct {
	User, Organization []Item
}

// Service stores and recalls memories. It is safe for concurrent use.
type Service struct {
	index     vector.Index
	embed     llm.Embedder
	now       func() time.Time
	limit     int
	threshold float32
	allowed   []string
}

// Option tunes a Service.
type Option func(*Service)

// WithLimit sets the default number of memories per scope (default 10).
func WithLimit(n int) Option { return func(s *Service) { s.limit = n } }

// WithThreshold sets the default similarity below which memories are
// dropped (default 0.5).
func WithThreshold(t float32) Option { return func(s *Service) { s.threshold = t } }

// WithNamespaces allows organisation namespaces: a Query or Store naming
// another is an error, as the reference's allow-list makes it. Without
// it every namespace is allowed.
func WithNamespaces(ns ...string) Option { return func(s *Service) { s.allowed = ns } }

// WithClock sets the clock that stamps new memories (tests).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// MaxTextLen bounds one memory's text, in bytes.
const MaxTextLen = 16 << 10

// New returns a service on index and embedder. The service does not own
// the index: close it yourself.
func New(index vector.Index, e llm.Embedder, opts ...Option) (*Service, error) {
	if index == nil || e == nil {
		return nil, fmt.Errorf("%w: New needs an index and an embedder", ErrInvalid)
	}
	s := &Service{index: index, embed: e, now: time.Now, limit: 10, threshold: 0.5}
	for _, o := range opts {
		o(s)
	}
	if s.limit < 1 {
		s.limit = 1
	}
	return s, nil
}

// Metadata keys of the index records.
const (
	keyScope     = "scope"
	keyOwner     = "owner"
	keyNamespace = "namespace"
	keyAgent     = "agent_id"
	keyThread    = "thread_id"
	keyDisplay   = "display_id"
	keyRun       = "run_id"
	keyCreated   = "created_at"
)

// memoryID is stable for the same fact in the same place.
func memoryID(scope Scope, owner, namespace, text string) string {
	h := sha256.Sum256([]byte(string(scope) + "\x00" + owner + "\x00" + namespace + "\x00" + text))
	return hex.EncodeToString(h[:12])
}

// StoreUser stores texts as memories of p's user and returns their ids.
// Blank texts are skipped; a text stored before keeps its id.
func (s *Service) StoreUser(ctx context.Context, p Principal, texts []string, o Origin) ([]string, error) {
	if p.UserID == "" {
		return nil, fmt.Errorf("%w: no user to store memories for", ErrInvalid)
	}
	return s.store(ctx, ScopeUser, p.UserID, "", texts, o)
}

// StoreOrganization stores texts as memories of tenant in namespace. p
// must act within tenant.
func (s *Service) StoreOrganization(ctx context.Context, p Principal, tenant, namespace string, texts []string, o Origin) ([]string, error) {
	if !p.inOrg(tenant) {
		return nil, fmt.Errorf("%w: user %q does not act within organisation %q", ErrForbidden, p.UserID, tenant)
	}
	if strings.TrimSpace(namespace) == "" {
		return nil, fmt.Errorf("%w: organisation memories need a namespace", ErrInvalid)
	}
	if len(s.allowed) > 0 && !slices.Contains(s.allowed, namespace) {
		return nil, fmt.Errorf("%w: namespace %q is not one of %q", ErrInvalid, namespace, s.allowed)
	}
	return s.store(ctx, ScopeOrganization, tenant, namespace, texts, o)
}

func (s *Service) store(ctx context.Context, scope Scope, owner, namespace string, texts []string, o Origin) ([]string, error) {
	var keep []string
	for i, t := range texts {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if len(t) > MaxTextLen {
			return nil, fmt.Errorf("%w: memory %d has %d bytes, more than %d", ErrInvalid, i, len(t), MaxTextLen)
		}
		keep = append(keep, t)
	}
	if len(keep) == 0 {
		return nil, nil
	}
	vs, err := s.embed.Embed(ctx, keep)
	if err != nil {
		return nil, fmt.Errorf("memory: embedding: %w", err)
	}
	if len(vs) != len(keep) {
		return nil, fmt.Errorf("memory: embedder returned %d vectors for %d texts", len(vs), len(keep))
	}
	created := s.now().UTC().Format(time.RFC3339Nano)
	rs := make([]vector.Record, len(keep))
	ids := make([]string, len(keep))
	for i, t := range keep {
		ids[i] = memoryID(scope, owner, namespace, t)
		md := map[string]string{keyScope: string(scope), keyOwner: owner, keyCreated: created}
		for k, v := range map[string]string{keyNamespace: namespace, keyAgent: o.AgentID, keyThread: o.ThreadID, keyDisplay: o.DisplayID, keyRun: o.RunID} {
			if v != "" {
				md[k] = v
			}
		}
		rs[i] = vector.Record{ID: ids[i], Vector: vs[i], Text: t, Metadata: md}
	}
	if err := s.index.Upsert(ctx, rs...); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	return ids, nil
}

// Recall finds the memories closest to q.Text that p may read: p's own
// user memories and the memories of p's organisations.
func (s *Service) Recall(ctx context.Context, p Principal, q Query) (Recalled, error) {
	var out Recalled
	if strings.TrimSpace(q.Text) == "" {
		return out, nil
	}
	for _, ns := range q.Namespaces {
		if len(s.allowed) > 0 && !slices.Contains(s.allowed, ns) {
			return out, fmt.Errorf("%w: namespace %q is not one of %q", ErrInvalid, ns, s.allowed)
		}
	}
	if p.UserID == "" && len(p.Orgs) == 0 {
		return out, nil
	}
	vs, err := s.embed.Embed(ctx, []string{q.Text})
	if err != nil {
		return out, fmt.Errorf("memory: embedding the query: %w", err)
	}
	if len(vs) != 1 {
		return out, fmt.Errorf("memory: embedder returned %d vectors for one query", len(vs))
	}
	limit, threshold := q.Limit, q.Threshold
	if limit <= 0 {
		limit = s.limit
	}
	if threshold == 0 {
		threshold = s.threshold
	}
	if p.UserID != "" {
		if out.User, err = s.query(ctx, vs[0], limit, threshold, vector.Filter{keyScope: string(ScopeUser), keyOwner: p.UserID}); err != nil {
			return out, err
		}
	}
	namespaces := q.Namespaces
	if len(namespaces) == 0 {
		namespaces = s.allowed
	}
	for _, org := range p.Orgs {
		if org == "" {
			continue
		}
		f := vector.Filter{keyScope: string(ScopeOrganization), keyOwner: org}
		if len(namespaces) == 0 {
			items, err := s.query(ctx, vs[0], limit, threshold, f)
			if err != nil {
				return out, err
			}
			out.Organization = append(out.Organization, items...)
			continue
		}
		for _, ns := range namespaces {
			fn := vector.Filter{keyScope: string(ScopeOrganization), keyOwner: org, keyNamespace: ns}
			items, err := s.query(ctx, vs[0], limit, threshold, fn)
			if err != nil {
				return out, err
			}
			out.Organization = append(out.Organization, items...)
		}
	}
	sort.SliceStable(out.Organization, func(i, j int) bool { return out.Organization[i].Score > out.Organization[j].Score })
	if len(out.Organization) > limit {
		out.Organization = out.Organization[:limit]
	}
	return out, nil
}

func (s *Service) query(ctx context.Context, v []float32, limit int, threshold float32, f vector.Filter) ([]Item, error) {
	ms, err := s.index.Query(ctx, v, limit, f)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	var out []Item
	for _, m := range ms {
		if threshold > 0 && m.Score < threshold {
			continue
		}
		// The filter is the index's promise; check it again, since a
		// memory of someone else must never come back.
		if !f.Matches(m.Metadata) {
			continue
		}
		created, _ := time.Parse(time.RFC3339Nano, m.Metadata[keyCreated])
		out = append(out, Item{
			ID: m.ID, Scope: Scope(m.Metadata[keyScope]), Owner: m.Metadata[keyOwner], Namespace: m.Metadata[keyNamespace],
			Text: m.Text, CreatedAt: created, Score: m.Score,
			Origin: Origin{AgentID: m.Metadata[keyAgent], ThreadID: m.Metadata[keyThread], DisplayID: m.Metadata[keyDisplay], RunID: m.Metadata[keyRun]},
		})
	}
	return out, nil
}

// Forget deletes memories Recall returned to p. An item p may not write
// (another user's, an organisation p is not in, or an id that does not
// match the item) is ErrForbidden and nothing is deleted.
func (s *Service) Forget(ctx context.Context, p Principal, items ...Item) error {
	ids := make([]string, 0, len(items))
	for _, it := range items {
		ok := it.Scope == ScopeUser && it.Owner == p.UserID && p.UserID != "" ||
			it.Scope == ScopeOrganization && p.inOrg(it.Owner)
		if !ok || memoryID(it.Scope, it.Owner, it.Namespace, it.Text) != it.ID {
			return fmt.Errorf("%w: memory %q is not %q's to forget", ErrForbidden, it.ID, p.UserID)
		}
		ids = append(ids, it.ID)
	}
	if err := s.index.Delete(ctx, ids...); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return nil
}

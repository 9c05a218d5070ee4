package knowledge

import (
	"context"
	"slices"

	"github.com/saap-go/agent/event"
)

// Access decides who may read a collection. The capability asks it for
// each collection a search references, before anything is searched; a
// collection it denies is never queried. A nil user is a run that names
// no user (a scheduled run, say).
type Access interface {
	CanRead(ctx context.Context, user *event.UserIdentity, c event.KnowledgeReference) (bool, error)
}

// AccessFunc makes a function an Access.
type AccessFunc func(ctx context.Context, user *event.UserIdentity, c event.KnowledgeReference) (bool, error)

// CanRead implements Access.
func (f AccessFunc) CanRead(ctx context.Context, user *event.UserIdentity, c event.KnowledgeReference) (bool, error) {
	return f(ctx, user, c)
}

// Grant lists who may read a collection.
type Grant struct {
	// Users are user ids (UserIdentity.ID).
	Users []string
	// Orgs are the ids of tenants whose acting users may read it
	// (UserIdentity.ActingWithinTenant.ID).
	Orgs []string
	// AnyUser lets every identified user read it; a run without a user
	// still may not.
	AnyUser bool
	// System lets a run without a user read it: a scheduled run, the
	// platform's own work.
	System bool
}

// ACL is an Access from a table: each collection's grant. A collection
// that is not in the table is readable by nobody.
type ACL map[event.KnowledgeReference]Grant

// CanRead implements Access.
func (a ACL) CanRead(_ context.Context, user *event.UserIdentity, c event.KnowledgeReference) (bool, error) {
	g, ok := a[c]
	if !ok {
		return false, nil
	}
	if user == nil || user.ID == "" {
		return g.System, nil
	}
	if g.AnyUser || slices.Contains(g.Users, user.ID) {
		return true, nil
	}
	t := user.ActingWithinTenant
	return t != nil && t.ID != "" && slices.Contains(g.Orgs, t.ID), nil
}

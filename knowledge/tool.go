package knowledge

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/step"
)

// ToolName is the name the model calls the search by, as the reference
// names its knowledge tool.
const ToolName = "search_knowledge"

// SearchArgs are the arguments the model gives the search tool.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"description=what to search the knowledge collections for, as a standalone question or key words"`
	// Collections narrows the search; every offered collection when empty.
	Collections []string `json:"collections,omitempty" jsonschema:"description=the collections to search, as database/namespace; all offered ones when left out"`
}

// Tool returns the search as a tool for llm.Loop: the model chooses when to
// search and which of the offered collections (every collection of the
// Capability when none are given). Access is checked at each call for the
// calling user: the one WithUser put in the call's context, or else the
// user of the message the loop is answering. Collections the user may not
// read are not searched, and the result says so. The result is the text of
// the block a SearchKnowledgeEvent would be answered with.
//
// A call the loop makes after an approval question runs in the step that
// took the answer, which has no user message: behind llm.RequireApproval
// the tool reads only collections granted to the system, unless the
// context names the user (WithUser).
func (c *Capability) Tool(offered ...event.KnowledgeReference) llm.Callable {
	if len(offered) == 0 {
		for r := range c.Collections {
			offered = append(offered, r)
		}
		slices.SortFunc(offered, func(a, b event.KnowledgeReference) int {
			return strings.Compare(a.Database+"/"+a.Namespace, b.Database+"/"+b.Namespace)
		})
	}
	names := make([]string, len(offered))
	for i, r := range offered {
		names[i] = r.Database + "/" + r.Namespace
	}
	desc := "Searches knowledge collections for documents that answer a question, and returns them with their citation ids."
	if len(names) > 0 {
		desc += " Collections: " + strings.Join(names, ", ") + "."
	}
	return llm.Func(ToolName, desc, func(ctx context.Context, args SearchArgs) (string, error) {
		if strings.TrimSpace(args.Query) == "" {
			return "", errors.New("the query is empty: say what to search for")
		}
		var chosen []event.KnowledgeReference
		for i, n := range names {
			if slices.Contains(args.Collections, n) {
				chosen = append(chosen, offered[i])
			}
		}
		if len(chosen) == 0 {
			chosen = offered
		}
		res, err := c.Search(ctx, UserFrom(ctx), &event.SearchKnowledgeEvent{References: chosen, Query: args.Query, CiteSources: true})
		if err != nil {
			return "", err
		}
		parts := make([]string, 0, len(res.Block))
		for _, m := range res.Block {
			if t := m.Content(); t != "" {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "\n\n"), nil
	})
}

type userKey struct{}

// WithUser returns ctx naming the user a search tool call is made for.
func WithUser(ctx context.Context, u *event.UserIdentity) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user a call is made for: the one WithUser set, or,
// in a step, the user of the run's start event when it triggered the step
// (a tool loop's answer step); nil when neither names one.
func UserFrom(ctx context.Context) *event.UserIdentity {
	if u, ok := ctx.Value(userKey{}).(*event.UserIdentity); ok {
		return u
	}
	if sc, ok := ctx.(step.Context); ok {
		return startUser(sc.Run().Trigger)
	}
	return nil
}

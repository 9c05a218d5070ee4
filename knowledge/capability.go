package knowledge

import (
	"context"
	"errors"
	"fmt"
	"html"
	"sort"
	"strings"
	"sync"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// Capability answers SearchKnowledgeEvents as the reference platform's
// knowledge capability does: it searches the referenced collections the
// asking user may read and answers with a KnowledgeSearchedEvent holding
// one context block for the model, the sections it quotes
// (GroundingNodes) and the collections it refused. A refused collection
// (unknown, or one Access denies) is never queried; the block names it so
// the answer can say it was not used. A request without references is
// answered with an empty event.
//
// Step makes it a step of an agent's workflow; Tool offers the same
// search to the model in an llm.Loop. A Capability is configured once and
// shared by every run; it is safe for concurrent use.
type Capability struct {
	// Collections holds the retriever over each collection.
	Collections map[event.KnowledgeReference]Retriever
	// Access decides who reads which collection. Without it every
	// collection is refused: access is never granted by omission.
	Access Access
	// K is how many sections a search returns across its collections;
	// DefaultK when 0.
	K int
	// Reranker, when set, orders the sections of every searched
	// collection together; on its failure the retrieval order stays.
	Reranker Reranker
	// Texts are the block's instructions; DefaultTexts when zero.
	Texts Texts
	// OnError, when set, hears of a reranker's failure.
	OnError func(error)
}

// Texts are the instructions of a KnowledgeSearchedEvent's block.
type Texts struct {
	// Context introduces the documents found.
	Context string
	// Cite asks the model to cite its sources (when the request's
	// cite_sources is true).
	Cite string
	// Refused names the collections not searched; %s is their list.
	Refused string
	// NothingFound says the search found nothing.
	NothingFound string
}

// DefaultTexts are the block's instructions in English.
var DefaultTexts = Texts{
	Context: "Answer from the following documents of the knowledge collections the user referenced. " +
		"Each is a REFERENCE_DOCUMENT with its id and source.",
	Cite: "When you use a document, cite it by its id in square brackets, for example [s1a2b3c], " +
		"right after the statement it supports. Do not cite documents you did not use.",
	Refused: "The collections %s were not searched: they do not exist or the user may not read them. " +
		"If the answer needs them, say that they could not be searched; never answer as if you had read them.",
	NothingFound: "The referenced knowledge collections hold nothing for this request. " +
		"Say so rather than answering from general knowledge.",
}

func (c *Capability) texts() Texts {
	t := c.Texts
	d := DefaultTexts
	return Texts{Context: cmpOr(t.Context, d.Context), Cite: cmpOr(t.Cite, d.Cite),
		Refused: cmpOr(t.Refused, d.Refused), NothingFound: cmpOr(t.NothingFound, d.NothingFound)}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// MaxReferences bounds the collections one request may reference.
const MaxReferences = 64

// Search answers req for user (nil for a run without one). It fails on a
// query too long or too many references, when Access fails, or when a
// searched collection's retriever fails.
func (c *Capability) Search(ctx context.Context, user *event.UserIdentity, req *event.SearchKnowledgeEvent) (*event.KnowledgeSearchedEvent, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: no SearchKnowledgeEvent", ErrInvalid)
	}
	out := &event.KnowledgeSearchedEvent{ToolCallID: req.ToolCallID}
	if len(req.References) == 0 {
		return out, nil
	}
	if len(req.References) > MaxReferences {
		return nil, fmt.Errorf("%w: %d collections referenced, more than %d", ErrInvalid, len(req.References), MaxReferences)
	}
	if len(req.Query) > MaxQueryLen {
		return nil, fmt.Errorf("%w: query of %d bytes, more than %d", ErrInvalid, len(req.Query), MaxQueryLen)
	}
	searchable, refused, err := c.partition(ctx, user, req.References)
	if err != nil {
		return nil, err
	}
	var found []found
	if len(searchable) > 0 && strings.TrimSpace(req.Query) != "" {
		if found, err = c.find(ctx, searchable, req.Query); err != nil {
			return nil, err
		}
	}
	out.Refused = refused
	out.GroundingNodes = make([]event.IngestedNode, len(found))
	for i, f := range found {
		out.GroundingNodes[i] = f.node()
	}
	out.Block = c.block(out.GroundingNodes, refused, req.CiteSources)
	return out, nil
}

// partition splits the references, once each, into those to search and
// those refused: unknown collections and those the user may not read.
func (c *Capability) partition(ctx context.Context, user *event.UserIdentity, refs []event.KnowledgeReference) (searchable, refused []event.KnowledgeReference, err error) {
	seen := map[event.KnowledgeReference]bool{}
	for _, r := range refs {
		if seen[r] {
			continue
		}
		seen[r] = true
		ok := false
		if _, live := c.Collections[r]; live && c.Access != nil {
			if ok, err = c.Access.CanRead(ctx, user, r); err != nil {
				return nil, nil, fmt.Errorf("knowledge: check access to %s/%s: %w", r.Database, r.Namespace, err)
			}
		}
		if ok {
			searchable = append(searchable, r)
		} else {
			refused = append(refused, r)
		}
	}
	return searchable, refused, nil
}

// found is a section and the collection it came from.
type found struct {
	Result
	from event.KnowledgeReference
}

func (f found) node() event.IngestedNode {
	score := f.Score
	n := event.IngestedNode{ID: f.ID, DocumentID: f.DocumentID, Source: cmpOr(f.Title, f.DocumentID), Content: f.Text,
		Namespace: f.from.Namespace, Version: 1, Type: "content", ContentType: "text", Score: &score}
	if f.Title != "" {
		n.DocumentTitle = event.Str(f.Title)
	}
	return n
}

// find searches the collections in parallel and keeps the K best: the
// reranker's choice when there is one, else one collection's own order, or
// for several their reciprocal-rank fusion (their scores need not be
// comparable).
func (c *Capability) find(ctx context.Context, refs []event.KnowledgeReference, query string) ([]found, error) {
	k := c.K
	if k <= 0 {
		k = DefaultK
	}
	depth := k
	if c.Reranker != nil {
		depth = min(4*k, MaxK)
	}
	lists := make([][]Result, len(refs))
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, r := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Collections[r].Retrieve(ctx, Query{Text: query, K: depth})
			if err != nil {
				errs[i] = fmt.Errorf("knowledge: search %s/%s: %w", r.Database, r.Namespace, err)
				return
			}
			// Ids are unique within a collection only.
			for j := range res {
				res[j].ID = r.Database + "/" + r.Namespace + "/" + res[j].ID
			}
			lists[i] = res
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	from := map[string]event.KnowledgeReference{}
	for i, l := range lists {
		for _, r := range l {
			from[r.ID] = refs[i]
		}
	}
	var merged []Result
	if len(lists) == 1 {
		merged = lists[0]
	} else {
		merged = (&Hybrid{}).fuse(lists)
	}
	if c.Reranker != nil && len(merged) > 0 {
		out, err := c.Reranker.Rerank(ctx, query, merged, k)
		switch {
		case err == nil:
			merged = out
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case c.OnError != nil:
			c.OnError(err)
		}
	}
	merged = trim(merged, k)
	out := make([]found, len(merged))
	for i, r := range merged {
		ref := from[r.ID]
		r.ID = strings.TrimPrefix(r.ID, ref.Database+"/"+ref.Namespace+"/")
		out[i] = found{Result: r, from: ref}
	}
	return out, nil
}

// block renders the documents found, one REFERENCE_DOCUMENT per document
// in the order of their best section, and the instructions.
func (c *Capability) block(nodes []event.IngestedNode, refused []event.KnowledgeReference, cite bool) []event.ChatMessage {
	t := c.texts()
	var block []event.ChatMessage
	if len(nodes) > 0 {
		var order []string
		byDoc := map[string][]event.IngestedNode{}
		for _, n := range nodes {
			key := n.Namespace + "\x00" + n.DocumentID
			if _, ok := byDoc[key]; !ok {
				order = append(order, key)
			}
			byDoc[key] = append(byDoc[key], n)
		}
		var b strings.Builder
		b.WriteString(t.Context)
		for _, key := range order {
			ns := byDoc[key]
			sort.SliceStable(ns, func(i, j int) bool { return chunkNumber(ns[i].ID) < chunkNumber(ns[j].ID) })
			fmt.Fprintf(&b, "\n\n<REFERENCE_DOCUMENT id='%s' source='%s' namespace='%s'>\n",
				ns[0].CitationID(), attr(ns[0].Source), attr(ns[0].Namespace))
			for i, n := range ns {
				if i > 0 {
					b.WriteString("\n\n")
				}
				b.WriteString(n.Content)
			}
			b.WriteString("\n</REFERENCE_DOCUMENT>")
		}
		block = append(block, event.Text(event.RoleSystem, b.String()))
		if cite {
			block = append(block, event.Text(event.RoleSystem, t.Cite))
		}
	}
	if len(refused) > 0 {
		names := make([]string, len(refused))
		for i, r := range refused {
			names[i] = `"` + r.Database + "/" + r.Namespace + `"`
		}
		block = append(block, event.Text(event.RoleSystem, fmt.Sprintf(t.Refused, strings.Join(names, ", "))))
	}
	if len(nodes) == 0 && len(refused) == 0 {
		block = append(block, event.Text(event.RoleSystem, t.NothingFound))
	}
	return block
}

// attr makes a value safe inside a quoted attribute of the block.
func attr(s string) string { return html.EscapeString(strings.ReplaceAll(s, "'", "")) }

// chunkNumber is the n of a "<document>#<n>" id, for keeping a document's
// sections in their order; 0 for other ids.
func chunkNumber(id string) int {
	i := strings.LastIndexByte(id, '#')
	if i < 0 {
		return 0
	}
	n := 0
	for _, r := range id[i+1:] {
		if r < '0' || r > '9' {
			return 0
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// Step returns a step named name that answers the run's
// SearchKnowledgeEvents. The asking user is the one of the run's start
// event (a UserMessageEvent or a RAGStartEvent); a run started otherwise
// has no user, and reads only collections granted to the system.
func (c *Capability) Step(name string) *step.Step {
	fn := func(ctx step.Context, req *event.SearchKnowledgeEvent, start step.Maybe[step.Either[*event.UserMessageEvent, *event.RAGStartEvent]]) (*event.KnowledgeSearchedEvent, error) {
		var user *event.UserIdentity
		if start.OK {
			user = startUser(start.Value.Event())
		}
		return c.Search(ctx, user, req)
	}
	return step.New(fn, step.Name(name), step.Description("searches the knowledge collections the user may read"),
		step.Icon("mdi:bookshelf"))
}

// startUser is the user of a start event that names one.
func startUser(e event.Event) *event.UserIdentity {
	switch s := e.(type) {
	case *event.UserMessageEvent:
		return s.User
	case *event.RAGStartEvent:
		return s.User
	}
	return nil
}

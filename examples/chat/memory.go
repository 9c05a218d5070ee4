package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/memory"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/vector"
)

// memoryTitle heads the system message that carries a user's memories.
const memoryTitle = "What you remember about the user:"

// Memories is what ChatAgent remembers of its users across threads.
type Memories struct {
	svc   *memory.Service
	close func() error
}

// OpenMemories keeps the memories in dir (an embedded vector index on
// disk), or in memory when dir is empty. Embeddings come from e; nil is the
// offline hash embedder, which matches words, not meanings.
func OpenMemories(dir string, e llm.Embedder) (*Memories, error) {
	var idx *vector.Local
	if dir == "" {
		idx = vector.NewMemory()
	} else {
		var err error
		if idx, err = vector.Open(dir); err != nil {
			return nil, fmt.Errorf("chat memories in %s: %w", dir, err)
		}
	}
	threshold := float32(0.5) // the reference's, for a model's embeddings
	if e == nil {
		// Word overlap scores lower than meaning does.
		e, threshold = llmtest.HashEmbedder{}, 0.2
	}
	svc, err := memory.New(idx, e, memory.WithThreshold(threshold), memory.WithLimit(5))
	if err != nil {
		_ = idx.Close()
		return nil, err
	}
	return &Memories{svc: svc, close: idx.Close}, nil
}

// memoriesFromEnv opens the memories in CHAT_MEMORY_DIR (in memory when
// unset), with the provider's embeddings when it has them.
func memoriesFromEnv(p llm.Provider) (*Memories, error) {
	e, _ := p.(llm.Embedder)
	return OpenMemories(os.Getenv("CHAT_MEMORY_DIR"), e)
}

// Close closes the index.
func (m *Memories) Close() error { return m.close() }

// Recall is the conversation's memory hook: the user's memories close to
// the last message, as one system message, and then the last message
// itself remembered when it tells something (a statement, not a
// question). Recalling first keeps a message from recalling itself; the
// memory's id is derived from its text, so a re-run stores nothing twice.
func (m *Memories) Recall(ctx step.Context, msg *event.UserMessageEvent) ([]event.ChatMessage, error) {
	p := memory.PrincipalOf(msg.User)
	last := lastUserText(msg.Messages)
	if p.UserID == "" || last == "" {
		return nil, nil // nobody to remember for, or nothing said
	}
	got, err := m.svc.Recall(ctx, p, memory.Query{Text: last})
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(last, "?") {
		run := ctx.Run()
		if _, err := m.svc.StoreUser(ctx, p, []string{last}, memory.Origin{
			AgentID: run.AgentID, ThreadID: run.ThreadID, DisplayID: run.DisplayID, RunID: run.RunID,
		}); err != nil {
			return nil, err
		}
	}
	if len(got.User) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString(memoryTitle)
	for _, it := range got.User {
		b.WriteString("\n- ")
		b.WriteString(it.Text)
	}
	return []event.ChatMessage{event.Text(event.RoleSystem, b.String())}, nil
}

func lastUserText(msgs []event.ChatMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == event.RoleUser {
			return strings.TrimSpace(msgs[i].Content())
		}
	}
	return ""
}

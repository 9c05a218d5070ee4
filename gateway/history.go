package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/saap-go/agent/event"
)

// Thread history: what the user said and what the agents answered in a
// thread, kept so that a client may send only its newest message and the
// agent still sees the conversation, as the reference platform does. The
// reference persists every display event of a thread in its database and
// projects the client-visible ones into messages when it builds a start
// event (its thread service's "conversation history" projection): the last
// message of each user echo (UserMessageEvent), each HITL answer as a user
// message, and as the assistant's message the chunks streamed in that
// display plus what the primary agent's StopEvent output_messages hold
// beyond them; a HITL question counts as assistant text. The gateway keeps
// that projection directly, one entry per message, instead of every event.

// History keeps the messages of threads. The gateway appends to it as it
// publishes a user's message and sees the agents' answers, fills start
// events from it, and serves it to the thread's members
// (GET /api/v1/saap/threads/{thread}/messages). Implementations must be
// safe for concurrent use; NewJetStreamHistory keeps it on the agents' own
// NATS server, NewMemoryHistory in the process.
type History interface {
	// Append adds e to the end of thread's history. An entry whose ID the
	// thread already holds (a retried append) may be dropped.
	Append(ctx context.Context, thread string, e HistoryEntry) error
	// Read returns up to limit entries of thread with a sequence above
	// after, oldest first; limit <= 0 means all of them. An unknown thread
	// has an empty history.
	Read(ctx context.Context, thread string, after uint64, limit int) ([]HistoryEntry, error)
}

// HistoryEntry is one message of a thread's history.
type HistoryEntry struct {
	// Seq orders the entries of a thread and is the paging cursor; the
	// store assigns it (a JetStream stream sequence: increasing, not
	// contiguous).
	Seq uint64 `json:"seq"`
	// ID is the event id the entry was made from, so a retried append is
	// recognised.
	ID string `json:"id"`
	// Message is the chat message in the protocol's wire format
	// (role, blocks, additional_kwargs), as a start event's messages
	// carry it.
	Message json.RawMessage `json:"message"`
	// Class and AgentID name the agent addressed (a user message) or
	// answering; Display and Run where it happened; User who wrote a user
	// message.
	Class   string `json:"agent_class,omitempty"`
	AgentID string `json:"agent_id,omitempty"`
	Display string `json:"display_id,omitempty"`
	Run     string `json:"run_id,omitempty"`
	User    string `json:"user_id,omitempty"`
	// CreatedAt is the event's time in Unix nanoseconds.
	CreatedAt int64 `json:"created_at"`
}

// ChatMessage decodes the entry's message.
func (e HistoryEntry) ChatMessage() (event.ChatMessage, error) {
	var m event.ChatMessage
	if err := event.UnmarshalValue(e.Message, &m); err != nil {
		return m, fmt.Errorf("gateway: history entry %d: %w", e.Seq, err)
	}
	return m, nil
}

// HistoryLimits are the retention settings of a history store.
type HistoryLimits struct {
	// MaxAge drops entries older than this. Default 90 days; negative:
	// keep them forever.
	MaxAge time.Duration
	// MaxPerThread keeps only a thread's newest entries. Default 10000;
	// negative: no bound.
	MaxPerThread int64
}

func (l HistoryLimits) withDefaults() HistoryLimits {
	switch {
	case l.MaxAge == 0:
		l.MaxAge = 90 * 24 * time.Hour
	case l.MaxAge < 0:
		l.MaxAge = 0
	}
	switch {
	case l.MaxPerThread == 0:
		l.MaxPerThread = 10000
	case l.MaxPerThread < 0:
		l.MaxPerThread = 0
	}
	return l
}

// MemoryHistory is the in-process History: it forgets everything when the
// process ends. The zero value is not usable; call NewMemoryHistory.
type MemoryHistory struct {
	limits HistoryLimits
	now    func() time.Time

	mu      sync.Mutex
	seq     uint64
	threads map[string][]stored
	ids     map[string]bool // thread + "\x00" + id
}

// stored is an entry and when it was appended, which MaxAge counts from
// (as a stream's MaxAge does).
type stored struct {
	HistoryEntry
	at time.Time
}

// NewMemoryHistory returns an empty in-memory history with limits.
func NewMemoryHistory(limits HistoryLimits) *MemoryHistory {
	return &MemoryHistory{limits: limits.withDefaults(), now: time.Now,
		threads: make(map[string][]stored), ids: make(map[string]bool)}
}

// Append implements History.
func (h *MemoryHistory) Append(_ context.Context, thread string, e HistoryEntry) error {
	if err := checkEntry(thread, e); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	key := thread + "\x00" + e.ID
	if h.ids[key] {
		return nil
	}
	h.ids[key] = true
	h.seq++
	e.Seq = h.seq
	now := h.now()
	es := append(h.threads[thread], stored{e, now})
	drop := 0
	if max := h.limits.MaxPerThread; max > 0 && int64(len(es)) > max {
		drop = len(es) - int(max)
	}
	for h.limits.MaxAge > 0 && drop < len(es) && now.Sub(es[drop].at) > h.limits.MaxAge {
		drop++
	}
	if drop > 0 {
		for _, old := range es[:drop] {
			delete(h.ids, thread+"\x00"+old.ID)
		}
		es = slices.Clone(es[drop:])
	}
	h.threads[thread] = es
	return nil
}

// Read implements History.
func (h *MemoryHistory) Read(_ context.Context, thread string, after uint64, limit int) ([]HistoryEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []HistoryEntry
	var cutoff time.Time
	if h.limits.MaxAge > 0 {
		cutoff = h.now().Add(-h.limits.MaxAge)
	}
	for _, e := range h.threads[thread] {
		if e.Seq <= after || e.at.Before(cutoff) {
			continue
		}
		out = append(out, e.HistoryEntry)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, nil
}

// checkEntry refuses an entry no reader could use.
func checkEntry(thread string, e HistoryEntry) error {
	if err := validToken("thread_id", thread); err != nil {
		return fmt.Errorf("gateway: history: %w", err)
	}
	if e.ID == "" {
		return errors.New("gateway: history: an entry needs the id of its event")
	}
	if len(e.Message) == 0 {
		return errors.New("gateway: history: an entry needs a message")
	}
	if !json.Valid(e.Message) {
		return errors.New("gateway: history: the entry's message is not JSON")
	}
	return nil
}

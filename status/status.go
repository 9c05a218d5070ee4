package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/topic"
)

// State is where a run stands.
type State string

// Run states. A run moves from pending (its start event was handled, no
// step ran yet) through running and waiting (an open question) to
// completed or failed; a failed run whose completed steps declared
// compensations goes on through compensating to compensated. A cancelled
// run ends as cancelled, through compensating when it has compensations
// to run.
const (
	Pending      State = "pending"
	Running      State = "running"
	Waiting      State = "waiting"
	Completed    State = "completed"
	Failed       State = "failed"
	Compensating State = "compensating"
	Compensated  State = "compensated"
	Cancelled    State = "cancelled"
)

// Ended reports whether s is a final state: completed, failed,
// compensated or cancelled.
func (s State) Ended() bool {
	return s == Completed || s == Failed || s == Compensated || s == Cancelled
}

// Valid reports whether s is one of the run states.
func (s State) Valid() bool {
	switch s {
	case Pending, Running, Waiting, Completed, Failed, Compensating, Compensated, Cancelled:
		return true
	}
	return false
}

// StateNames lists the run states, for messages.
const StateNames = "pending, running, waiting, completed, failed, compensating, compensated, cancelled"

// Record is the status record of one run, as the engine keeps it: one
// small value per run, replaced at each transition.
type Record struct {
	Class   string `json:"agent_class"`
	Run     string `json:"run_id"`
	AgentID string `json:"agent_id"`
	Thread  string `json:"thread_id"`
	// Display is the run's display id (the subjects' fifth token), which a
	// client needs to address the run.
	Display string `json:"display_id,omitempty"`
	State   State  `json:"status"`
	// Question is the open question of a waiting run.
	Question *Question `json:"question,omitempty"`
	// Error is the message of the ExceptionEvent that failed the run.
	Error string `json:"error,omitempty"`
	// Compensated and CompensationFailed name the steps whose compensation
	// ran, or was given up, in the order they ran.
	Compensated        []string `json:"compensated_steps,omitempty"`
	CompensationFailed []string `json:"compensation_failed_steps,omitempty"`
	// Updated is when the record was written.
	Updated time.Time `json:"updated_at"`
}

// Question is the question a waiting run asked.
type Question struct {
	EventID string `json:"event_id"`
	Event   string `json:"event"` // wire name of the request
	// Deadline is when the question times out, if it carries a timeout.
	Deadline *time.Time `json:"deadline,omitempty"`
}

// ErrNotFound is returned when a run has no status record: it never
// started here, or its record outlived the store's retention.
var ErrNotFound = errors.New("status: no status for this run")

// Read returns the status of run of class from s. It returns an error
// wrapping ErrNotFound when there is no record, and one saying so when s
// keeps no status.
func Read(ctx context.Context, s store.Store, class, run string) (Record, error) {
	ss, ok := s.(store.Statuses)
	if !ok {
		return Record{}, fmt.Errorf("status: the store %T keeps no run status", s)
	}
	if err := topic.ValidateToken("agent_class", class); err != nil {
		return Record{}, fmt.Errorf("status: status: %w", err)
	}
	if err := topic.ValidateToken("run_id", run); err != nil {
		return Record{}, fmt.Errorf("status: status: %w", err)
	}
	raw, found, err := ss.Status(ctx, store.RunKey{Class: class, Run: run})
	if err != nil {
		return Record{}, fmt.Errorf("status: read status of run %s: %w", run, err)
	}
	if !found {
		return Record{}, fmt.Errorf("%w: run %s of %s", ErrNotFound, run, class)
	}
	var st Record
	if err := json.Unmarshal(raw, &st); err != nil {
		return Record{}, fmt.Errorf("status: status of run %s: %w", run, err)
	}
	return st, nil
}

// Query selects runs for List.
type Query struct {
	// Thread restricts the list to one thread; "" lists the whole class.
	Thread string `json:"thread_id,omitempty"`
	// States keeps only runs in one of these states; empty keeps all.
	States []State `json:"states,omitempty"`
	// After is the cursor: the Next of the previous page, "" for the first.
	After string `json:"after,omitempty"`
	// Limit is the page size: 0 means DefaultPageSize, at most MaxPageSize.
	Limit int `json:"limit,omitempty"`
}

// Page sizes of List.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// Page is one page of List, in ascending order of run id.
type Page struct {
	Runs []Record `json:"runs"`
	// Next is the cursor of the next page; "" on the last page.
	Next string `json:"next,omitempty"`
}

// List lists the runs of class in s that q selects, one page at a
// time. The cost is proportional to the runs the store keeps (within its
// retention), not to the page.
func List(ctx context.Context, s store.Store, class string, q Query) (Page, error) {
	ss, ok := s.(store.Statuses)
	if !ok {
		return Page{}, fmt.Errorf("status: the store %T keeps no run status", s)
	}
	if err := topic.ValidateToken("agent_class", class); err != nil {
		return Page{}, fmt.Errorf("status: list runs: %w", err)
	}
	if q.Thread != "" {
		if err := topic.ValidateToken("thread_id", q.Thread); err != nil {
			return Page{}, fmt.Errorf("status: list runs: %w", err)
		}
	}
	for _, st := range q.States {
		if !st.Valid() {
			return Page{}, fmt.Errorf("status: list runs: %q is not a run status (%s)", st, StateNames)
		}
	}
	switch {
	case q.Limit < 0:
		return Page{}, fmt.Errorf("status: list runs: limit %d is negative", q.Limit)
	case q.Limit == 0:
		q.Limit = DefaultPageSize
	case q.Limit > MaxPageSize:
		q.Limit = MaxPageSize
	}
	page := Page{Runs: []Record{}}
	after := q.After
	for {
		// Read one more than asked, to know whether a next page exists.
		batch := q.Limit + 1
		entries, err := ss.ListStatus(ctx, class, q.Thread, after, batch)
		if err != nil {
			return Page{}, fmt.Errorf("status: list runs of %s: %w", class, err)
		}
		for _, en := range entries {
			var st Record
			if err := json.Unmarshal(en.Value, &st); err != nil {
				return Page{}, fmt.Errorf("status: status of run %s: %w", en.Run, err)
			}
			if len(q.States) > 0 && !slices.Contains(q.States, st.State) {
				after = en.Run
				continue
			}
			if len(page.Runs) == q.Limit {
				page.Next = page.Runs[len(page.Runs)-1].Run
				return page, nil
			}
			page.Runs = append(page.Runs, st)
			after = en.Run
		}
		if len(entries) < batch {
			return page, nil
		}
	}
}

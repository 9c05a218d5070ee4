// Package store defines the state store an agent runner keeps shared run
// state in, and the types its implementations share. The implementations are
// siblings: memory (in process), natskv (JetStream KV, the default) and redis;
// storetest is the conformance suite each must pass. A store is chosen by URL
// through Open, where drivers register themselves on import, as database/sql
// drivers do.
package store

import (
	"context"
	"encoding/json"
	"errors"
)

// RunKey names the state namespace of one run. All run state (claims,
// counters, markers, run context) is namespaced by agent class and run id,
// so a delegate that shares a caller's run id cannot touch the caller's
// state.
type RunKey struct {
	Class string
	Run   string
}

// ScopeKind says whether a Scope is a run context or a thread context.
type ScopeKind int

// Scope kinds.
const (
	RunScope    ScopeKind = iota + 1 // run context: deleted by Store.DeleteRun
	ThreadScope                      // thread context: lives across runs
)

// String returns "run" or "thread".
func (k ScopeKind) String() string {
	switch k {
	case RunScope:
		return "run"
	case ThreadScope:
		return "thread"
	}
	return "unknown"
}

// Scope names a key-value context: the run context of (Class, ID=run id) or
// the thread context of (Class, ID=thread id).
type Scope struct {
	Kind  ScopeKind
	Class string
	ID    string
}

// RunContext returns the run-context scope of run.
func (r RunKey) RunContext() Scope { return Scope{Kind: RunScope, Class: r.Class, ID: r.Run} }

// ThreadContext returns the thread-context scope of thread in class.
func ThreadContext(class, thread string) Scope {
	return Scope{Kind: ThreadScope, Class: class, ID: thread}
}

// ClaimStatus is what Store.Claim found or did.
type ClaimStatus int

// Claim statuses.
const (
	// Claimed: the claim did not exist; this call created it and took one
	// execution slot of the step's counter. Run the step.
	Claimed ClaimStatus = iota + 1
	// Pending: the claim exists but was never completed (a crash in the
	// middle of the step). Run the step again: it is the same execution and
	// took no new slot.
	Pending
	// Done: the claim was completed; skip. ClaimResult.Outcome says how it
	// ended.
	Done
	// Limited: the claim did not exist and the step's counter had reached the
	// limit; nothing was created. Skip.
	Limited
)

// String returns the status name in lower case.
func (s ClaimStatus) String() string {
	switch s {
	case Claimed:
		return "claimed"
	case Pending:
		return "pending"
	case Done:
		return "done"
	case Limited:
		return "limited"
	}
	return "unknown"
}

// ClaimRequest asks for one execution of a step with one binding.
type ClaimRequest struct {
	// Step is the step's name; it also names the step's execution counter.
	Step string
	// Key identifies the binding (a hash of the bound control event ids).
	Key string
	// Max is the step's max executions per run; 0 means unlimited.
	Max int64
}

// Outcome is how a claimed execution ended.
type Outcome struct {
	// Failed is true when the step failed and the failure was recorded
	// instead of ending the run (stop_on_error=false).
	Failed bool `json:"failed,omitempty"`
	// Message is the failure's message.
	Message string `json:"message,omitempty"`
	// Outputs are the events the execution produced (its outputs, or the
	// ExceptionEvent of a failure that ends the run), encoded, kept until
	// all of them are published. The engine completes a claim with them
	// before it publishes, and again without them once they are all
	// published; a Done claim that still has Outputs is published again on
	// redelivery instead of running the step again. A store keeps them as
	// it keeps the rest of the outcome.
	Outputs []json.RawMessage `json:"outputs,omitempty"`
}

// Equal reports whether o and p are the same outcome, outputs included.
func (o Outcome) Equal(p Outcome) bool {
	if o.Failed != p.Failed || o.Message != p.Message || len(o.Outputs) != len(p.Outputs) {
		return false
	}
	for i := range o.Outputs {
		if string(o.Outputs[i]) != string(p.Outputs[i]) {
			return false
		}
	}
	return true
}

// ClaimResult is the answer of Store.Claim.
type ClaimResult struct {
	Status ClaimStatus
	// Outcome is set when Status is Done.
	Outcome Outcome
	// Count is the step's execution counter after the call (after the
	// increment for Claimed).
	Count int64
}

// Marker names. Markers are small values of a run that survive
// Store.DeleteRun (the reference's step_markers).
const (
	// MarkerEnd is set by teardown to "completed" or "crashed", once the
	// run's state is deleted: a redelivered terminal event that finds it
	// knows there is nothing left to do. The engine writes it only for a
	// terminal event that another process published or that came from
	// outside; otherwise MarkerTerminal holds the end.
	MarkerEnd = "end"
	// MarkerCleaned was set by earlier versions once teardown deleted the
	// run's state; MarkerEnd now tells it, and this one is not written.
	MarkerCleaned = "cleaned"
	// MarkerTerminal is set when this SDK published or received a StopEvent
	// or ExceptionEvent for the run; no replica publishes or starts anything
	// for the run after it. Its value is the run's end ("completed" or
	// "crashed"; earlier versions wrote "published" or "received").
	MarkerTerminal = "terminal"
)

// End marker values.
const (
	Completed = "completed"
	Crashed   = "crashed"
)

// ErrNotFound is returned by Store.Complete when the claim does not exist
// (for example because the run was torn down while the step ran).
var ErrNotFound = errors.New("store: not found")

// ErrNotInteger is returned by Store.Incr when the stored value is not a
// decimal integer.
var ErrNotInteger = errors.New("store: value is not an integer")

// Store holds the state of runs and threads that must be shared by all
// replicas of an agent class: idempotency claims, execution counters,
// markers, the run and thread contexts, the runs' status records, and
// watches of markers. It is made of small interfaces, each one concern;
// every store implements all of them, and the conformance suite in package
// storetest checks each. A wrapper around a Store (for metrics, say) that
// embeds it keeps every feature.
//
// Every method is safe for concurrent use and atomic as documented. Keys and
// names are arbitrary non-empty strings (they may contain dots, spaces,
// slashes or any Unicode); an implementation whose backend restricts key
// characters must encode them. Values are opaque bytes (JSON in practice).
//
// The interfaces are kept small so that they map onto NATS KV
// (create / update-with-revision) and Redis (SETNX, INCRBY, Lua) directly.
type Store interface {
	Runs
	Contexts
	Statuses
	Watcher
}

// Runs is the part of a Store that keeps each run's executions: claims,
// counters and markers.
type Runs interface {
	// Claim atomically looks up the claim (run, req.Step, req.Key) and, if it
	// is absent and the step's counter is below req.Max (or req.Max is 0),
	// creates it as pending and increments the counter by one. Of concurrent
	// calls for the same absent claim exactly one returns Claimed; the
	// counter never exceeds req.Max. Existing claims are reported as Pending
	// or Done and change nothing.
	Claim(ctx context.Context, run RunKey, req ClaimRequest) (ClaimResult, error)
	// Complete records the outcome of a claim, which then reports Done with
	// that outcome, Outputs included. It returns ErrNotFound (and stores
	// nothing) if the claim does not exist. Completing a Done claim again
	// overwrites the outcome (the engine does, to drop the kept outputs once
	// they are published).
	Complete(ctx context.Context, run RunKey, step, key string, o Outcome) error
	// Record records a finished execution of a step without a limit in one
	// write: the claim and its completion are one record. If the claim
	// (run, step, key) is absent it is created completed with outcome o,
	// Outputs included, counts as one execution of step, and Record returns
	// Claimed. If it is pending (created by Claim: an execution that was
	// interrupted or is running elsewhere), it is completed with o, takes no
	// new slot, and Record returns Claimed too. If it is completed already,
	// nothing is written and Record returns Done with the stored outcome:
	// another execution recorded first, and its outputs are the ones to
	// publish. Of concurrent calls for one absent claim exactly one returns
	// Claimed. Count(step) counts the claims Record created as it counts
	// those of Claim; the result's Count is not set (a store may need
	// another round trip to know it), and the Count of a later Claim of
	// the same step may leave out what Record counted.
	Record(ctx context.Context, run RunKey, step, key string, o Outcome) (ClaimResult, error)
	// Count returns the execution counter of step in run (0 if absent).
	Count(ctx context.Context, run RunKey, step string) (int64, error)

	// SetMarker sets marker name of run to value if it is not set yet. It
	// returns the marker's value after the call and whether this call set it.
	// Markers survive DeleteRun.
	SetMarker(ctx context.Context, run RunKey, name, value string) (current string, created bool, err error)
	// Marker returns the value of marker name of run, and whether it is set.
	Marker(ctx context.Context, run RunKey, name string) (string, bool, error)

	// DeleteRun deletes the run's claims, counters and run context. Markers
	// and every other run's state are kept. It is idempotent.
	DeleteRun(ctx context.Context, run RunKey) error
}

// Contexts is the part of a Store that keeps key-value contexts: each run's
// run context and each thread's thread context.
type Contexts interface {
	// Get returns the value of key in scope, and false if it is absent.
	Get(ctx context.Context, s Scope, key string) ([]byte, bool, error)
	// Set stores value under key in scope.
	Set(ctx context.Context, s Scope, key string, value []byte) error
	// Delete removes key from scope; deleting an absent key is not an error.
	Delete(ctx context.Context, s Scope, key string) error
	// Keys lists the keys of scope, sorted.
	Keys(ctx context.Context, s Scope) ([]string, error)
	// Incr atomically adds delta to the integer stored under key (absent
	// counts as 0) and returns the new value. The value is stored as a
	// decimal integer, which is also valid JSON; incrementing a value that is
	// not an integer is an error.
	Incr(ctx context.Context, s Scope, key string, delta int64) (int64, error)
	// SetMany stores every entry under its key in scope, as Set would, in
	// about one round trip. It is not atomic: on error some entries may be
	// stored. Keys must be distinct.
	SetMany(ctx context.Context, s Scope, entries []Entry) error
}

// Entry is one key and value of a context, for Contexts.SetMany.
type Entry struct {
	Key   string
	Value []byte
}

// Watcher is the part of a Store that follows one marker of a class's runs
// as it is set. The engine uses it for MarkerTerminal: a replica that has
// read a run's terminal marker once learns from the watch when it is set,
// instead of reading it again for every event of the run.
type Watcher interface {
	// WatchMarker calls fn with the run id whenever marker name of a run of
	// class is set from the time WatchMarker returns, in the order they are
	// set, one call at a time, until the watch is stopped. ctx bounds the
	// set-up only.
	WatchMarker(ctx context.Context, class, name string, fn func(run string)) (MarkerWatch, error)
}

// MarkerWatch is a running watch of Watcher.
type MarkerWatch interface {
	// Live reports whether fn has been told of every marker set since the
	// watch began, but for those in flight. It turns false for good when
	// that may no longer hold (the watch ended, or its connection was
	// lost and markers may come late); the engine then reads markers
	// again and starts a new watch.
	Live() bool
	// Stop ends the watch; fn is not called after Stop returns.
	Stop()
}

// Statuses is the part of a Store that keeps the status record of each run:
// one value per run, replaced at every transition, found by run and listed
// by class or by thread. Records expire with the store's retention of run
// state (the NATS KV bucket's TTL, the Redis expiry), so the index never
// grows with ended runs beyond what the operator keeps. Package status reads
// and lists them.
type Statuses interface {
	// PutStatus stores value as the status record of run in thread,
	// replacing the previous one. The caller does not change value
	// afterwards, so the store may keep it.
	PutStatus(ctx context.Context, run RunKey, thread string, value []byte) error
	// Status returns the record of run, and false if there is none.
	Status(ctx context.Context, run RunKey) ([]byte, bool, error)
	// ListStatus returns up to limit records of class (of thread only,
	// unless thread is ""), in ascending order of run id, starting after
	// run id after ("" for the first). limit ≤ 0 means no limit.
	ListStatus(ctx context.Context, class, thread, after string, limit int) ([]StatusEntry, error)
}

// StatusEntry is one record of Statuses.ListStatus.
type StatusEntry struct {
	Run   string
	Value []byte
}

// A LossReporter is a store that tells when its storage was removed under
// it (a deleted bucket it recreated): Lost yields the cause, and the runs
// whose state was there have lost it. The runner then ends them.
type LossReporter interface {
	Lost() <-chan error
}

// InProcess is implemented by stores whose calls cost no round trip (the
// in-memory store): the engine then makes its store calls one after the
// other instead of overlapping them. A store without it is taken to be
// remote, which is only slower for an in-process one.
type InProcess interface {
	InProcess() bool
}

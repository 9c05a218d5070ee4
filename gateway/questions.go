package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/saap-go/agent/event"
)

// QuestionState is where a HITL question stands.
type QuestionState string

// The states of a question. Only an open question can be answered.
const (
	// QuestionOpen: asked and not yet answered.
	QuestionOpen QuestionState = "open"
	// QuestionAnswered: an answer was accepted and sent to the agent.
	QuestionAnswered QuestionState = "answered"
	// QuestionExpired: the agent's wait for the answer timed out.
	QuestionExpired QuestionState = "expired"
)

// Question is a HITL request the gateway has seen an agent publish into a
// thread. The gateway routes an answer by what it recorded here, never by
// the copy of the request a client sends back.
type Question struct {
	// EventID is the request event's event_id; it names the question.
	EventID string `json:"event_id"`
	// Class, AgentID, Thread, Display and Run are the asking run's topic.
	Class   string `json:"agent_class"`
	AgentID string `json:"agent_id"`
	Thread  string `json:"thread_id"`
	Display string `json:"display_id"`
	Run     string `json:"run_id"`
	// Response is the name of the response event the agent waits for.
	Response string `json:"event_name"`
	// HITLType is the request's hitl_type (input, confirmation, chat).
	HITLType string `json:"hitl_type"`
	// Request is the request event's JSON as the agent published it; it
	// becomes the answer's request_event.
	Request json.RawMessage `json:"request"`
	// State is the question's state.
	State QuestionState `json:"state"`
}

// ErrQuestionUnknown is returned by Questions.Settle for an event id no
// question has.
var ErrQuestionUnknown = errors.New("gateway: unknown question")

// StateError is returned by Questions.Settle when the question is not in
// the state the caller expected.
type StateError struct {
	EventID string
	State   QuestionState
}

func (e *StateError) Error() string {
	return fmt.Sprintf("gateway: question %s is %s", e.EventID, e.State)
}

// Questions keeps the HITL questions the gateway has seen and which runs
// have ended, so an answer reaches only a question that is still open, in
// the run that asked it.
//
// Implementations must be safe for concurrent use, also across gateway
// replicas sharing one store: Settle must be atomic, so of two concurrent
// answers to one question exactly one succeeds. NewMemoryQuestions is the
// in-process default; NewKVStore shares the state through NATS.
type Questions interface {
	// Ask records q as open unless a question with its event id is already
	// known; a known question keeps its state.
	Ask(ctx context.Context, q Question) error
	// Question returns the question with eventID; ok is false when none is
	// known.
	Question(ctx context.Context, eventID string) (q Question, ok bool, err error)
	// Settle moves the question from state from to state to. It returns
	// ErrQuestionUnknown for an unknown id and a *StateError when the
	// question is not in state from.
	Settle(ctx context.Context, eventID string, from, to QuestionState) (Question, error)
	// EndRun records that run of class in thread has ended (it published a
	// stop or an exception): its questions can no longer be answered.
	EndRun(ctx context.Context, thread, class, run string) error
	// RunEnded reports whether EndRun was called for the run.
	RunEnded(ctx context.Context, thread, class, run string) (bool, error)
}

// ThreadQuestions is implemented by question stores that know the latest
// input or chat question asked in each thread. The chat flow uses it to
// turn a thread's next user message into the answer on any gateway
// replica; MemoryQuestions and KVStore implement it.
type ThreadQuestions interface {
	// LastChatQuestion returns the latest input or chat question recorded
	// for thread, whatever its state; ok is false when there is none.
	LastChatQuestion(ctx context.Context, thread string) (q Question, ok bool, err error)
}

// chatAnswerable reports whether a question of type hitlType can be
// answered by the thread's next chat message: input and chat questions
// can, confirmations and tool approvals need an explicit answer.
func chatAnswerable(hitlType string) bool {
	return hitlType == event.HITLInput || hitlType == event.HITLChat
}

// MemoryQuestions is the in-memory Questions store. Its state lives as long
// as the process; the zero value is not usable, call NewMemoryQuestions.
// It keeps at most memoryLimit closed questions and ended runs: beyond that
// it forgets them (an answer to a forgotten closed question gets 404, not
// 409).
type MemoryQuestions struct {
	mu    sync.Mutex
	qs    map[string]Question
	ended map[[3]string]bool
	last  map[string]string // thread → event id of its latest chat question
}

// NewMemoryQuestions returns an empty in-memory question store.
func NewMemoryQuestions() *MemoryQuestions {
	return &MemoryQuestions{qs: make(map[string]Question), ended: make(map[[3]string]bool), last: make(map[string]string)}
}

// Ask implements Questions.
func (m *MemoryQuestions) Ask(_ context.Context, q Question) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.qs[q.EventID]; !ok {
		if len(m.qs) >= memoryLimit {
			for id, x := range m.qs {
				if x.State != QuestionOpen {
					delete(m.qs, id)
				}
			}
		}
		q.State = QuestionOpen
		m.qs[q.EventID] = q
		if chatAnswerable(q.HITLType) {
			if len(m.last) >= memoryLimit {
				clear(m.last)
			}
			m.last[q.Thread] = q.EventID
		}
	}
	return nil
}

// LastChatQuestion implements ThreadQuestions.
func (m *MemoryQuestions) LastChatQuestion(_ context.Context, thread string) (Question, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.qs[m.last[thread]]
	return q, ok, nil
}

// memoryLimit bounds the closed questions and ended runs MemoryQuestions
// keeps.
const memoryLimit = 1 << 16

// Question implements Questions.
func (m *MemoryQuestions) Question(_ context.Context, eventID string) (Question, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.qs[eventID]
	return q, ok, nil
}

// Settle implements Questions.
func (m *MemoryQuestions) Settle(_ context.Context, eventID string, from, to QuestionState) (Question, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.qs[eventID]
	if !ok {
		return Question{}, ErrQuestionUnknown
	}
	if q.State != from {
		return q, &StateError{EventID: eventID, State: q.State}
	}
	q.State = to
	m.qs[eventID] = q
	return q, nil
}

// EndRun implements Questions.
func (m *MemoryQuestions) EndRun(_ context.Context, thread, class, run string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ended) >= memoryLimit {
		clear(m.ended)
	}
	m.ended[[3]string{thread, class, run}] = true
	return nil
}

// RunEnded implements Questions.
func (m *MemoryQuestions) RunEnded(_ context.Context, thread, class, run string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ended[[3]string{thread, class, run}], nil
}

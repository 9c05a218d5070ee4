// Command rag runs RAGAgent, the protocol's retrieval example: it condenses
// the conversation into a standalone question, retrieves passages from a
// small bundled corpus on the embedded vector index (with BM25 fused in by
// rank, or alone: -retrieval), and answers from them. Its internal
// steps exchange control events only; a client of the gateway sees its own
// message, the RetrieverEvent listing the passages (a RETRIEVER span when
// traced) and the final StopEvent.
//
// Usage:
//
//	go run ./examples/rag                   # one demo question, print the run, exit
//	go run ./examples/rag -ask "text"       # the same for your question
//	go run ./examples/rag -serve :8080      # serve the gateway until Ctrl-C
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/examples/internal/demo"
	"github.com/saap-go/agent/examples/internal/demo/demotrace"
	"github.com/saap-go/agent/knowledge"
	"github.com/saap-go/agent/step"
	_ "github.com/saap-go/agent/store/redis" // REDIS_URL keeps run state in Redis
	"github.com/saap-go/agent/vector"
)

// CondenseQuestionEvent carries the standalone question (the protocol
// example's event of the same name).
type CondenseQuestionEvent struct {
	event.ControlEvent
	CondensedQuestion string `json:"condensed_question" description:"the conversation condensed into one question"`
}

// Node is a retrieved passage.
type Node struct {
	ID      string  `json:"id"`
	Source  string  `json:"source"`
	Content string  `json:"content"`
	Score   float64 `json:"score"`
}

// RetrieveEvent carries the passages that match the question best.
type RetrieveEvent struct {
	event.ControlEvent
	Nodes []Node `json:"nodes" description:"passages ranked by the retriever, best first"`
}

func init() {
	event.MustRegister[CondenseQuestionEvent]()
	event.MustRegister[RetrieveEvent]()
}

// RAGAgent answers questions from its corpus.
type RAGAgent struct {
	retriever knowledge.Retriever
	topK      int
}

// Describe gives the texts discovery publishes.
func (a *RAGAgent) Describe() agent.Description {
	return agent.Description{
		Name:        event.L("Wissensfragen", "Knowledge questions", "Questions de connaissance", "Domande di conoscenza"),
		Description: event.L("", "Answers from a small bundled corpus, citing its sources.", "", ""),
		Icon:        "mage:book",
	}
}

// Steps is the workflow: condense → retrieve → answer.
func (a *RAGAgent) Steps() []*step.Step {
	return []*step.Step{
		step.New(a.Condense, step.Description("condenses the conversation into one question")),
		step.New(a.Retrieve, step.Description("ranks the corpus on the vector index and with BM25"),
			step.Emits(&RetrieveEvent{}, &event.RetrieverEvent{})),
		step.New(a.Answer, step.Description("answers from the best passages")),
	}
}

// Condense turns the conversation into a standalone question: in a
// follow-up, a word that refers back ("it", "its", "that") is replaced by
// the subject of the previous question, so "Which stream stores its control
// events?" after "What is NATS?" becomes "Which stream stores NATS's control
// events?".
func (a *RAGAgent) Condense(ctx step.Context, msg *event.UserMessageEvent) (*CondenseQuestionEvent, error) {
	var questions []string
	for _, m := range msg.Messages {
		if m.Role == event.RoleUser {
			if t := strings.TrimSpace(m.Content()); t != "" {
				questions = append(questions, t)
			}
		}
	}
	if len(questions) == 0 {
		return nil, fmt.Errorf("the conversation has no user question")
	}
	q := questions[len(questions)-1]
	if len(questions) > 1 {
		q = resolve(q, subject(questions[len(questions)-2]))
	}
	return &CondenseQuestionEvent{CondensedQuestion: q}, nil
}

// subject is what a question asks about: "What is NATS?" → "NATS".
func subject(question string) string {
	s := strings.TrimRight(strings.TrimSpace(question), "?!. ")
	lower := strings.ToLower(s)
	for _, p := range []string{"what is ", "what are ", "who is ", "tell me about ", "explain "} {
		if strings.HasPrefix(lower, p) {
			return strings.TrimSpace(s[len(p):])
		}
	}
	return s
}

// resolve replaces the first referring word of q by subj.
func resolve(q, subj string) string {
	words := strings.Fields(q)
	for i, w := range words {
		core := strings.TrimRight(w, "?!.,")
		rest := w[len(core):]
		switch strings.ToLower(core) {
		case "it", "this", "that", "they", "them":
			words[i] = subj + rest
		case "its", "their":
			words[i] = subj + "'s" + rest
		default:
			continue
		}
		return strings.Join(words, " ")
	}
	return q
}

// Retrieve ranks the corpus for the question. Besides the passages for
// Answer, it publishes a RetrieverEvent: tracing shows it as a RETRIEVER
// span listing the documents and their scores.
func (a *RAGAgent) Retrieve(ctx step.Context, q *CondenseQuestionEvent) ([]event.Event, error) {
	hits, err := a.retriever.Retrieve(ctx, knowledge.Query{Text: q.CondensedQuestion, K: a.topK})
	if err != nil {
		return nil, err
	}
	nodes := make([]Node, len(hits))
	retrieved := make([]event.IngestedNode, len(hits))
	for i, h := range hits {
		nodes[i] = Node{ID: h.ID, Source: h.Title, Content: h.Text, Score: h.Score}
		retrieved[i] = event.IngestedNode{ID: h.ID, DocumentID: h.ID, Source: h.Title, Content: h.Text, Score: &h.Score,
			Version: 1, Type: "content", ContentType: "text"}
	}
	return []event.Event{&event.RetrieverEvent{Nodes: retrieved}, &RetrieveEvent{Nodes: nodes}}, nil
}

// Answer writes the answer from the best passages and cites them. It ends
// the run with an LLMStopEvent, whose last output message is the answer (the
// gateway's OpenAI endpoint and chat history read it there).
func (a *RAGAgent) Answer(ctx step.Context, q *CondenseQuestionEvent, r *RetrieveEvent) (*event.LLMStopEvent, error) {
	var b strings.Builder
	if len(r.Nodes) == 0 {
		b.WriteString("I found nothing about that in my documents.")
	} else {
		b.WriteString(r.Nodes[0].Content)
		b.WriteString(" [" + r.Nodes[0].Source + "]")
		if len(r.Nodes) > 1 {
			b.WriteString("\n\nSee also: ")
			for i, n := range r.Nodes[1:] {
				if i > 0 {
					b.WriteString("; ")
				}
				b.WriteString(n.Source + " (" + n.ID + ")")
			}
		}
	}
	stop := &event.LLMStopEvent{}
	stop.InputMessages = []event.Message{event.MessageFromString(event.RoleUser, q.CondensedQuestion)}
	stop.OutputMessages = []event.Message{event.MessageFromString(event.RoleAssistant, b.String())}
	stop.ChatModelName = event.Str("extractive")
	stop.Provider = event.Str("local") // no model service: the answer is extracted here
	return stop, nil
}

var (
	retrieval = flag.String("retrieval", string(ByVector), "how to rank the corpus: vector (the vector index), hybrid (the vector index and BM25, fused by rank) or bm25")
	indexDir  = flag.String("index", "", "keep the vector index in this directory (it survives a restart); in memory when empty")
)

func main() {
	var index vector.Index
	demo.Main(demo.Command{
		Tracing:  demotrace.Tracing,
		Name:     "rag",
		AskUsage: "ask this question instead of the demo question, print the run and exit",
		Agent: func() (agent.Agent, error) {
			r, ix, err := Retriever(context.Background(), Retrieval(*retrieval), *indexDir, func(s string) {
				fmt.Fprintln(os.Stderr, "rag:", s)
			})
			if err != nil {
				return nil, err
			}
			index = ix
			return &RAGAgent{retriever: r, topK: 3}, nil
		},
		Instance: "wiki",
		// A two-turn conversation: the follow-up refers back.
		Demo: []demo.Message{
			{Role: "user", Content: "What is NATS?"},
			{Role: "assistant", Content: "The messaging system under the protocol."},
			{Role: "user", Content: "Which stream stores its control events?"},
		},
		Want: "LLMStopEvent",
	})
	if index != nil {
		// A clean close writes the snapshot, so the next start reads no log.
		if err := index.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "rag: close the vector index:", err)
			os.Exit(1)
		}
	}
}

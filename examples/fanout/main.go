// Command fanout runs ReviewAgent, a fan-out/fan-in workflow: one step
// splits a review into three tasks that run in parallel, and the results
// are gathered by a step that takes a fixed-size list of exactly three
// results. Two gathering steps share that input; their preconditions decide
// which one ends the run.
//
// Usage:
//
//	go run ./examples/fanout                  # review a demo text, print the run, exit
//	go run ./examples/fanout -ask "text"      # review your text
//	go run ./examples/fanout -serve :8080     # serve the gateway until Ctrl-C
package main

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/examples/internal/demo"
	"github.com/saap-go/agent/examples/internal/demo/demotrace"
	"github.com/saap-go/agent/step"
	_ "github.com/saap-go/agent/store/redis" // REDIS_URL keeps run state in Redis
)

// ReviewTask asks one reviewer to look at one aspect of the text.
type ReviewTask struct {
	event.ControlEvent
	Aspect string `json:"aspect" description:"length, clarity or tone"`
	Text   string `json:"text"`
}

// ReviewResult is one reviewer's verdict.
type ReviewResult struct {
	event.ControlEvent
	Aspect string `json:"aspect"`
	Score  int    `json:"score" description:"0 (bad) to 10 (good)"`
	Note   string `json:"note"`
}

// ReviewReport ends the run with the combined verdict; content is the
// report as text, for chat clients.
type ReviewReport struct {
	event.StopEvent
	Verdict string         `json:"verdict" description:"approved or needs work"`
	Scores  map[string]int `json:"scores"`
	Content string         `json:"content"`
}

func init() {
	event.MustRegister[ReviewTask]()
	event.MustRegister[ReviewResult]()
	event.MustRegister[ReviewReport]()
}

// aspects are reviewed in parallel, one task each.
var aspects = [3]string{"length", "clarity", "tone"}

// passMark is the lowest score every aspect needs for approval.
const passMark = 6

// ReviewAgent reviews a text from three sides at once.
type ReviewAgent struct{}

// Describe gives the texts discovery publishes.
func (ReviewAgent) Describe() agent.Description {
	return agent.Description{
		Name:        event.L("Textprüfung", "Text review", "Relecture", "Revisione"),
		Description: event.L("", "Reviews a text for length, clarity and tone in parallel.", "", ""),
	}
}

// Steps is the workflow. Approve and Revise take the same fixed-size list:
// each becomes ready exactly when the third result arrives (never on two,
// never again on a fourth), and exactly one precondition holds.
func (a ReviewAgent) Steps() []*step.Step {
	return []*step.Step{
		step.New(a.Plan, step.Description("fans out one task per aspect")),
		step.New(a.Review, step.Description("reviews one aspect")),
		step.New(a.Approve, step.Precondition(allPass), step.Description("all aspects pass")),
		step.New(a.Revise, step.Precondition(notAllPass), step.Description("some aspect fails")),
	}
}

// Plan fans out: it returns one task per aspect, published in order; each
// triggers its own Review, and the runtime runs them concurrently.
func (ReviewAgent) Plan(ctx step.Context, msg *event.UserMessageEvent) ([]*ReviewTask, error) {
	text := ""
	if n := len(msg.Messages); n > 0 {
		text = strings.TrimSpace(msg.Messages[n-1].Content())
	}
	if text == "" {
		return nil, fmt.Errorf("nothing to review: the last message has no text")
	}
	tasks := make([]*ReviewTask, len(aspects))
	for i, a := range aspects {
		tasks[i] = &ReviewTask{Aspect: a, Text: text}
	}
	return tasks, nil
}

// Review scores one aspect of the text.
func (ReviewAgent) Review(ctx step.Context, t *ReviewTask) (*ReviewResult, error) {
	score, note := review(t.Aspect, t.Text)
	return &ReviewResult{Aspect: t.Aspect, Score: score, Note: note}, nil
}

// allPass is Approve's precondition: every aspect reached the pass mark.
func allPass(ctx step.Context, rs [3]*ReviewResult) (bool, error) {
	for _, r := range rs {
		if r.Score < passMark {
			return false, nil
		}
	}
	return true, nil
}

// notAllPass is Revise's precondition.
func notAllPass(ctx step.Context, rs [3]*ReviewResult) (bool, error) {
	ok, err := allPass(ctx, rs)
	return !ok, err
}

// Approve fans in: it gets all three results at once.
func (ReviewAgent) Approve(ctx step.Context, rs [3]*ReviewResult) (*ReviewReport, error) {
	return report("approved", rs), nil
}

// Revise fans in when some aspect failed.
func (ReviewAgent) Revise(ctx step.Context, rs [3]*ReviewResult) (*ReviewReport, error) {
	return report("needs work", rs), nil
}

func report(verdict string, rs [3]*ReviewResult) *ReviewReport {
	r := &ReviewReport{Verdict: verdict, Scores: map[string]int{}}
	var b strings.Builder
	fmt.Fprintf(&b, "Verdict: %s.", verdict)
	// Results arrive in any order; report them in the aspects' order.
	for _, a := range aspects {
		for _, x := range rs {
			if x.Aspect == a {
				r.Scores[a] = x.Score
				fmt.Fprintf(&b, " %s %d/10 (%s).", a, x.Score, x.Note)
			}
		}
	}
	r.Content = b.String()
	return r
}

// review is the reviewers' deterministic judgement.
func review(aspect, text string) (int, string) {
	words := strings.Fields(text)
	switch aspect {
	case "length":
		switch n := len(words); {
		case n < 8:
			return 4, fmt.Sprintf("%d words: too short to say much", n)
		case n > 80:
			return 5, fmt.Sprintf("%d words: too long", n)
		default:
			return 9, fmt.Sprintf("%d words", n)
		}
	case "clarity":
		sentences := strings.FieldsFunc(text, func(r rune) bool { return r == '.' || r == '!' || r == '?' })
		if len(sentences) == 0 {
			return 5, "no sentence"
		}
		avg := float64(len(words)) / float64(len(sentences))
		if avg > 20 {
			return 5, fmt.Sprintf("%.0f words per sentence: split them", avg)
		}
		return 9, fmt.Sprintf("%.0f words per sentence", avg)
	case "tone":
		shouting := strings.Count(text, "!")
		for _, w := range words {
			if len(w) > 2 && strings.ToUpper(w) == w && strings.IndexFunc(w, unicode.IsLetter) >= 0 {
				shouting++
			}
		}
		if shouting > 1 {
			return 3, "shouts"
		}
		return 9, "calm"
	}
	return 0, "unknown aspect"
}

func main() {
	demo.Main(demo.Command{
		Tracing:  demotrace.Tracing,
		Name:     "fanout",
		AskUsage: "review this text instead of the demo text, print the run and exit",
		Agent:    func() (agent.Agent, error) { return ReviewAgent{}, nil },
		Instance: "editor",
		Demo: []demo.Message{{Role: "user",
			Content: "Our new release makes agents durable. Steps run again after a crash, and a paused run costs nothing."}},
		Label: "review",
		Want:  "ReviewReport",
	})
}

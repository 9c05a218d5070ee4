// Package devdemo is the small agent the developer tools are tested with:
// it cleans the user's message, streams a reply word by word, asks the
// user's name (a HITL input question) when the message starts with "ask",
// and shows a thought first when it starts with "think".
package devdemo

import (
	"strings"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
)

// Cleaned is the user's text with spaces collapsed.
type Cleaned struct {
	event.ControlEvent
	Text string `json:"text"`
}

// Replied ends the run with the whole answer.
type Replied struct {
	event.StopEvent
	Answer string `json:"answer"`
}

func init() {
	event.MustRegister[Cleaned]()
	event.MustRegister[Replied]()
}

// Echo is the agent; Prefix starts every reply (a test changes it to see a
// replay differ).
type Echo struct{ Prefix string }

// Class is the agent class.
func (e *Echo) Class() string { return "EchoAgent" }

// Steps is the workflow: Clean, then Reply, and Greet for the answer.
func (e *Echo) Steps() []*step.Step {
	return []*step.Step{
		step.New(e.Clean),
		step.New(e.Reply, step.Emits((*Replied)(nil), (*event.HumanInTheLoopInputRequestEvent)(nil))),
		step.New(e.Greet),
	}
}

// Clean collapses the spaces of the last message.
func (e *Echo) Clean(_ step.Context, msg *event.UserMessageEvent) (*Cleaned, error) {
	text := ""
	if n := len(msg.Messages); n > 0 {
		text = msg.Messages[n-1].Content()
	}
	return &Cleaned{Text: strings.Join(strings.Fields(text), " ")}, nil
}

// Reply asks for a name on "ask…", else streams the echo.
func (e *Echo) Reply(ctx step.Context, c *Cleaned) (event.Event, error) {
	if strings.HasPrefix(c.Text, "ask") {
		return hitl.Input("What is your name?")
	}
	if strings.HasPrefix(c.Text, "think") {
		thought := "The user wants me to think."
		if err := ctx.Emit(&event.ThoughtEvent{ReasoningContent: &thought}); err != nil {
			return nil, err
		}
	}
	return e.stream(ctx, e.prefix()+"You said: "+c.Text)
}

// Greet answers the name.
func (e *Echo) Greet(ctx step.Context, r *event.HumanInTheLoopInputResponseEvent) (*Replied, error) {
	return e.stream(ctx, e.prefix()+"Nice to meet you, "+r.Response+"!")
}

func (e *Echo) prefix() string {
	if e.Prefix == "" {
		return ""
	}
	return e.Prefix + " "
}

// stream emits the answer as one chunk per word.
func (e *Echo) stream(ctx step.Context, answer string) (*Replied, error) {
	words := strings.SplitAfter(answer, " ")
	for _, w := range words {
		if err := ctx.Emit(&event.ChunkEvent{Content: w}); err != nil {
			return nil, err
		}
	}
	return &Replied{Answer: answer}, nil
}

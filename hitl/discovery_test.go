package hitl_test

import (
	"slices"
	"testing"
	"time"

	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
)

// Discovery lists every question a class asks and every answer it takes,
// so a gateway registers answer endpoints for them; a timeout is no answer
// anyone may post, so it is not listed.
func TestDiscoveryListsQuestions(t *testing.T) {
	input := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.HumanInTheLoopInputRequestEvent, error) {
		return hitl.Input("Name?", hitl.Timeout(time.Minute))
	}, step.Name("input"))
	chat := step.New(func(ctx step.Context, _ *event.HumanInTheLoopInputResponseEvent) (*event.HumanInTheLoopChatRequestEvent, error) {
		return hitl.Chat("Anything else?")
	}, step.Name("chat"), step.MaxExecutions(1))
	tool := step.New(func(ctx step.Context, _ *event.HumanInTheLoopChatResponseEvent) (*event.ToolApprovalRequestEvent, error) {
		return hitl.ToolApproval("Send the mail?", hitl.Tool{CallID: "c1", Name: "send_mail", Kind: "function"})
	}, step.Name("tool"), step.MaxExecutions(1))
	done := step.New(func(ctx step.Context, _ *event.HumanInTheLoopConfirmationResponseEvent) (*event.StopEvent, error) {
		return &event.StopEvent{}, nil
	}, step.Name("done"))
	late := step.New(func(ctx step.Context, _ *event.HumanInTheLoopTimeoutEvent) (*event.StopEvent, error) {
		return &event.StopEvent{}, nil
	}, step.Name("late"))
	w, err := step.NewWorkflow("Asker", input, chat, tool, done, late)
	if err != nil {
		t.Fatal(err)
	}
	r, err := discovery.Build(w, discovery.Class{})
	if err != nil {
		t.Fatal(err)
	}
	names := func(specs []event.EventSpecs) []string {
		var out []string
		for _, s := range specs {
			out = append(out, s.EventName)
		}
		return out
	}
	wantReq := []string{"HumanInTheLoopChatRequestEvent", "HumanInTheLoopInputRequestEvent", "ToolApprovalRequestEvent"}
	wantResp := []string{"HumanInTheLoopChatResponseEvent", "HumanInTheLoopConfirmationResponseEvent", "HumanInTheLoopInputResponseEvent"}
	if got := names(r.HITLRequestEvents); !slices.Equal(got, wantReq) {
		t.Errorf("hitl_request_events %v, want %v", got, wantReq)
	}
	if got := names(r.HITLResponseEvents); !slices.Equal(got, wantResp) {
		t.Errorf("hitl_response_events %v, want %v", got, wantResp)
	}
	for _, s := range r.HITLResponseEvents {
		if s.EventSchema == nil || len(s.EventParents) == 0 {
			t.Errorf("%s listed without schema or parents", s.EventName)
		}
	}
}

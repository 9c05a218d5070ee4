package hitl_test

import (
	"fmt"
	"time"

	"github.com/saap-go/agent/hitl"
)

// A confirmation with a timeout, as a step returns it.
func ExampleConfirm() {
	req, err := hitl.Confirm("Approve the expense of 1200 CHF?", hitl.Timeout(10*time.Minute))
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := hitl.TimeoutOf(req)
	fmt.Println(req.HITLType, *req.Topic.EventName, d)
	// Output: confirmation HumanInTheLoopConfirmationResponseEvent 10m0s
}

// Bad input gets an error naming what was wrong.
func ExampleInput() {
	_, err := hitl.Input("What is the cost centre?", hitl.Timeout(-time.Second))
	fmt.Println(err)
	// Output: hitl: invalid request: timeout of HumanInTheLoopInputRequestEvent -1s: it must be positive
}

// A tool call waits for a human's approval; the answer is a
// HumanInTheLoopConfirmationResponseEvent.
func ExampleToolApproval() {
	req, _ := hitl.ToolApproval("Send the offer to the customer?", hitl.Tool{
		CallID: "call_1", Name: "send_mail", Kind: "function",
	})
	fmt.Println(req.HITLType, req.Name, *req.Topic.EventName)
	// Output: confirmation send_mail HumanInTheLoopConfirmationResponseEvent
}

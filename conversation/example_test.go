package conversation_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/saap-go/agent/conversation"
	"github.com/saap-go/agent/event"
)

// Fit keeps the system prompt, the last message and as many of the newest
// whole turns as the budget holds.
func ExampleConversation_Fit() {
	c := &conversation.Conversation{Budget: 60} // counted by the local Estimate
	msgs := []event.ChatMessage{event.Text(event.RoleSystem, "Be brief.")}
	for i := range 5 {
		msgs = append(msgs, event.Text(event.RoleUser, fmt.Sprintf("Question %d about Swiss taxes?", i)),
			event.Text(event.RoleAssistant, "An answer of a few words."))
	}
	msgs = append(msgs, event.Text(event.RoleUser, "And the VAT rate?"))
	fitted, err := c.Fit(context.Background(), msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range fitted.History {
		fmt.Printf("%s: %s\n", m.Role, m.Content())
	}
	fmt.Println("left out:", fitted.Dropped)

	_, err = c.Fit(context.Background(), []event.ChatMessage{event.Text(event.RoleUser, strings.Repeat("long ", 100))})
	fmt.Println(err)
	// Output:
	// system: Be brief.
	// user: Question 4 about Swiss taxes?
	// assistant: An answer of a few words.
	// user: And the VAT rate?
	// left out: 8
	// conversation: the turn needs 171 input tokens, more than the budget of 60
}

package conversation_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/saap-go/agent/conversation"
	"github.com/saap-go/agent/event"
)

// BenchmarkFit measures fitting a 200-turn history (about 100 KB) with the
// local Estimate, against the baseline of counting that history once:
// "fits" is one count, "trims" the binary search for the cut.
func BenchmarkFit(b *testing.B) {
	var msgs []event.ChatMessage
	for i := range 200 {
		msgs = append(msgs, event.Text(event.RoleUser, fmt.Sprintf("Question %d: %s", i, strings.Repeat("words ", 40))),
			event.Text(event.RoleAssistant, strings.Repeat("an answer ", 25)))
	}
	msgs = append(msgs, event.Text(event.RoleUser, "last"))
	ctx := context.Background()
	whole := (&conversation.Conversation{}).Request(msgs)
	total, _ := conversation.Estimate.CountTokens(ctx, whole)
	b.Run("baseline=count-once", func(b *testing.B) {
		for b.Loop() {
			if _, err := conversation.Estimate.CountTokens(ctx, (&conversation.Conversation{}).Request(msgs)); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, bc := range []struct {
		name   string
		budget int
	}{{"fits", total + 1}, {"trims", total / 10}} {
		c := &conversation.Conversation{Budget: bc.budget}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.Fit(ctx, msgs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

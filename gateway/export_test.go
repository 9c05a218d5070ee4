package gateway

import (
	"context"
	"encoding/json"

	"github.com/saap-go/agent/event"
)

// WatchQuestionsOnce subscribes to the discovered classes' questions as Run
// does, at once; stop ends the subscriptions.
func (g *Gateway) WatchQuestionsOnce(ctx context.Context) (stop func()) {
	w := g.newQuestionWatch()
	w.sync(ctx)
	return w.close
}

// NoHealthCache makes every health request check JetStream afresh.
func (g *Gateway) NoHealthCache() {
	if g.health != nil {
		g.health.ttl = 0
	}
}

// FillMessages fills body as a UserMessageEvent start in thread with
// reconstruct_history.
func (g *Gateway) FillMessages(ctx context.Context, thread string, body map[string]json.RawMessage) (bool, error) {
	return g.fillMessages(ctx, thread, event.EventSpecs{EventName: "UserMessageEvent"}, body, true)
}

package gateway

import "context"

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

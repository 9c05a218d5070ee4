package engine

import (
	"context"
	"errors"

	"github.com/saap-go/agent/store"
)

// Binding returns the claim key and the output id of stepName's execution
// bound to inputIDs in run, as a runner computes them, so that a test can
// write the state a runner of an earlier layout left behind.
func Binding(ctx context.Context, e *Engine, run string, stepName string, inputIDs ...string) (key, outID string, err error) {
	id, err := e.loadIdentity(ctx, store.RunKey{Class: e.class, Run: run})
	if err != nil {
		return "", "", err
	}
	if id == nil {
		return "", "", errors.New("the run has no identity")
	}
	b := bindingOf(e.class, run, stepName, append([]string(nil), inputIDs...))
	b.secret = id.secret
	return b.key, b.id("out", 0), nil
}

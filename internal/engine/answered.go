package engine

import (
	"context"
	"fmt"

	"github.com/saap-go/agent/store"
)

// Answered reports whether the question requestID of run has its outcome
// already (an answer or a timeout), and the event id of that outcome. A
// component that brings answers into runs checks it to drop a late answer
// quietly instead of sending one the run would refuse.
func Answered(ctx context.Context, s store.Store, run store.RunKey, requestID string) (by string, ok bool, err error) {
	by, ok, err = s.Marker(ctx, run, answeredPrefix+requestID)
	if err != nil {
		return "", false, fmt.Errorf("dispatch: read the outcome of question %s: %w", requestID, err)
	}
	return by, ok, nil
}

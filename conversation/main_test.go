package conversation_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: Complete's
// title and follow-up calls run in parallel and must all be waited for.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

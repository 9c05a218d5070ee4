package dispatch_test

import (
	"testing"

	"github.com/saap-go/agent/dispatch"
	"github.com/saap-go/agent/dispatch/storetest"
)

func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) dispatch.Store { return dispatch.NewMemoryStore() })
}

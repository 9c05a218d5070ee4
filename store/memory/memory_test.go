package memory_test

import (
	"testing"

	"github.com/saap-go/agent/store"
	"github.com/saap-go/agent/store/memory"
	"github.com/saap-go/agent/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
}

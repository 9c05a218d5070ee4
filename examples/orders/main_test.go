package main

import (
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/internal/exectest"
	"github.com/saap-go/agent/step"
)

// The example is built once and run as a process, as a user runs it.
func TestOrdersExample(t *testing.T) {
	bin := exectest.Build(t)

	t.Run("demo", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, 2*time.Minute, exectest.Env())
		if err != nil {
			t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		for _, want := range []string{
			"result (OrderShipped): shipped 2 x book",
			"payments: declined the charge",
			"result (ExceptionEvent): the payment was declined",
			"warehouse: released R-2 (1 x lamp)",
			"event StepCompensatedEvent step=Reserve attempts=1",
			"event RunCompensatedEvent compensated=[Reserve] failed=[]",
			`compensated (error "the payment was declined", compensated [Reserve])`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		// The order that shipped is never compensated: one release, no refund.
		if n := strings.Count(out, "warehouse: released"); n != 1 || strings.Contains(out, "payments: refunded") {
			t.Errorf("%d releases and refunds %v, want one release and no refund", n, strings.Contains(out, "refunded"))
		}
	})

	t.Run("fail-charge", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, 2*time.Minute, exectest.Env(), "-fail-charge")
		if err != nil {
			t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		if strings.Contains(out, "OrderShipped") || !strings.Contains(out, ": compensated") {
			t.Errorf("with -fail-charge: want only the compensated order:\n%s", out)
		}
	})
}

// The agent's event contracts match the committed snapshot: a change that
// would break a deployed peer (a removed or retyped field, a renamed
// event) fails here. After a deliberate change, rewrite it with
// SAAP_UPDATE_CONTRACTS=1 go test ./examples/orders.
func TestOrdersContracts(t *testing.T) {
	w, err := step.NewWorkflow("OrderAgent", (&OrderAgent{}).Steps()...)
	if err != nil {
		t.Fatal(err)
	}
	agenttest.CheckContracts(t, w, "testdata/contracts.json")
}

package agenttest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

type (
	// PlaceOrder, Invoice and Receipt are the contract test's events.
	PlaceOrder struct {
		event.StartEvent
		Item  string  `json:"item" event:"required"`
		Count int     `json:"count"`
		Note  *string `json:"note"`
	}
	Invoice struct {
		event.ControlEvent
		Amount int    `json:"amount"`
		Payee  string `json:"payee"`
	}
	Receipt struct{ event.StopEvent }
)

func init() {
	event.MustRegister[PlaceOrder]()
	event.MustRegister[Invoice]()
	event.MustRegister[Receipt]()
}

func contractWorkflow(t *testing.T) *step.Workflow {
	t.Helper()
	return mustWorkflow(t, "Orders",
		step.New(func(ctx step.Context, o *PlaceOrder) (*Invoice, error) { return &Invoice{}, nil }, step.Name("bill")),
		step.New(func(ctx step.Context, i *Invoice) (*Receipt, error) { return &Receipt{}, nil }, step.Name("pay")))
}

// edit returns c with the schema of event name changed by f (on a decoded
// copy), as an older snapshot would have it.
func edit(t *testing.T, c agenttest.Contracts, name string, f func(schema map[string]any)) agenttest.Contracts {
	t.Helper()
	raw, _ := json.Marshal(c)
	var cp agenttest.Contracts
	if err := json.Unmarshal(raw, &cp); err != nil {
		t.Fatal(err)
	}
	for i, e := range cp.Events {
		if e.Name != name {
			continue
		}
		var s map[string]any
		if err := json.Unmarshal(e.Schema, &s); err != nil {
			t.Fatal(err)
		}
		f(s)
		cp.Events[i].Schema, _ = json.Marshal(s)
	}
	return cp
}

func props(s map[string]any) map[string]any { return s["properties"].(map[string]any) }

// Each kind of breaking change is caught and explained; additions pass.
func TestContractsBreakingChanges(t *testing.T) {
	cur, err := agenttest.ContractsOf(contractWorkflow(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range cur.Events {
		names = append(names, fmt.Sprintf("%s consumed=%v produced=%v", e.Name, e.Consumed, e.Produced))
	}
	agenttest.Equal(t, names, []string{"Invoice consumed=true produced=true", "PlaceOrder consumed=true produced=false", "Receipt consumed=false produced=true"})
	if got := agenttest.Breaking(cur, cur); len(got) != 0 {
		t.Fatalf("a snapshot breaks itself: %v", got)
	}

	for _, tc := range []struct {
		name string
		old  agenttest.Contracts
		kind agenttest.ChangeKind
		want string // in the message
	}{
		{"field removed", edit(t, cur, "Invoice", func(s map[string]any) {
			props(s)["currency"] = map[string]any{"type": "string", "title": "Currency"}
		}), agenttest.FieldRemoved, "Invoice.currency: field removed: deployed consumers read it"},
		{"type changed", edit(t, cur, "Invoice", func(s map[string]any) {
			props(s)["amount"] = map[string]any{"type": "string", "title": "Amount"}
		}), agenttest.FieldTypeChange, `Invoice.amount: field type changed: it was {"type":"string"} and is {"type":"integer"}`},
		{"optional made required", edit(t, cur, "PlaceOrder", func(s map[string]any) {
			var req []any
			for _, r := range s["required"].([]any) {
				if r != "item" {
					req = append(req, r)
				}
			}
			s["required"] = req
		}), agenttest.FieldRequired, "PlaceOrder.item: field made required: deployed peers that leave it out"},
		{"event renamed", func() agenttest.Contracts {
			c := edit(t, cur, "", nil)
			c.Events = append(c.Events, agenttest.EventContract{Name: "Bill", Parents: []string{"Bill", "ControlEvent"}, Produced: true, Schema: json.RawMessage(`{}`)})
			return c
		}(), agenttest.EventRemoved, "Bill: event removed or renamed: deployed peers wait for it"},
		{"parent removed", func() agenttest.Contracts {
			c := edit(t, cur, "", nil)
			for i := range c.Events {
				if c.Events[i].Name == "Receipt" {
					c.Events[i].Parents = append(c.Events[i].Parents, "ReceiptBase")
				}
			}
			return c
		}(), agenttest.ParentRemoved, "Receipt: parent removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := agenttest.Breaking(tc.old, cur)
			if len(got) != 1 || got[0].Kind != tc.kind || !strings.Contains(got[0].String(), tc.want) {
				t.Fatalf("Breaking = %v, want one %q change mentioning %q", got, tc.kind, tc.want)
			}
		})
	}

	// Additions pass: an old snapshot without an optional field, without an
	// event that is new, or without a parent.
	older := edit(t, cur, "PlaceOrder", func(s map[string]any) { delete(props(s), "note") })
	older.Events = older.Events[1:] // no Invoice yet
	if got := agenttest.Breaking(older, cur); len(got) != 0 {
		t.Fatalf("additions reported as breaking: %v", got)
	}
}

// failRecorder is a testing.TB that records failures instead of failing.
type failRecorder struct {
	*testing.T
	failures []string
}

func (r *failRecorder) Error(args ...any) { r.failures = append(r.failures, fmt.Sprint(args...)) }
func (r *failRecorder) Fatal(args ...any) { r.failures = append(r.failures, fmt.Sprint(args...)) }

// CheckContracts writes a missing snapshot, passes while the code matches
// it, and fails naming the change when it does not.
func TestCheckContracts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "contracts.json")
	w := contractWorkflow(t)
	agenttest.CheckContracts(t, w, path) // writes it
	rec := &failRecorder{T: t}
	agenttest.CheckContracts(rec, w, path)
	if len(rec.failures) != 0 {
		t.Fatalf("unchanged code fails: %v", rec.failures)
	}
	old, err := agenttest.ReadContracts(path)
	if err != nil {
		t.Fatal(err)
	}
	old = edit(t, old, "Invoice", func(s map[string]any) { props(s)["payer"] = map[string]any{"type": "string"} })
	data, _ := old.Marshal()
	if err := writeFile(path, data); err != nil {
		t.Fatal(err)
	}
	agenttest.CheckContracts(rec, w, path)
	if len(rec.failures) != 1 || !strings.Contains(rec.failures[0], "Invoice.payer: field removed") ||
		!strings.Contains(rec.failures[0], agenttest.UpdateContractsEnv) {
		t.Fatalf("failures %q, want the removed field and how to accept it", rec.failures)
	}
}

func writeFile(path string, data []byte) error { return os.WriteFile(path, data, 0o644) }

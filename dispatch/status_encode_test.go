package dispatch

import (
	"encoding/json"
	"testing"
	"time"
)

// The status records written on every run are encoded by hand; they must
// be byte for byte what encoding/json writes, whatever the ids and times.
func TestStatusEncodeMatchesJSON(t *testing.T) {
	at := time.Date(2026, 12, 1, 13, 5, 6, 789000000, time.UTC)
	deadline := at.Add(time.Hour)
	cases := []RunStatus{
		{Class: "C", Run: "6b0ec8af62f70a375c883ad0", AgentID: "a", Thread: "t", State: StateRunning, Updated: at},
		{Class: "C", Run: "r", AgentID: "a", Thread: "t", State: StateCompleted, Updated: at.Truncate(time.Second)},
		{Class: "C", Run: "r", AgentID: "a", Thread: "t", State: StatePending, Updated: time.Date(2026, 1, 2, 3, 4, 5, 1, time.UTC)},
		{Class: "C<&>", Run: "r\"q", AgentID: "ü", Thread: "t\\", State: StateRunning, Updated: at},
		{Class: "C", Run: "r", AgentID: "a", Thread: "t", State: StateFailed, Error: "boom", Updated: at},
		{Class: "C", Run: "r", AgentID: "a", Thread: "t", State: StateWaiting, Question: &OpenQuestion{EventID: "e", Event: "HITLRequestEvent", Deadline: &deadline}, Updated: at},
		{Class: "C", Run: "r", AgentID: "a", Thread: "t", State: StateCompensated, Compensated: []string{"s"}, Updated: at},
		{Class: "C", Run: "r", AgentID: "a", Thread: "t", State: StateRunning, Updated: time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, st := range cases {
		want, wantErr := json.Marshal(st)
		got, err := st.encode()
		if (err != nil) != (wantErr != nil) || string(got) != string(want) {
			t.Errorf("encode(%+v)\n got %s, %v\nwant %s, %v", st, got, err, want, wantErr)
		}
	}
}

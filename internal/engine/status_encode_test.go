package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/saap-go/agent/status"
)

// The status records written on every run are encoded by hand; they must
// be byte for byte what encoding/json writes, whatever the ids and times.
func TestStatusEncodeMatchesJSON(t *testing.T) {
	at := time.Date(2026, 12, 1, 13, 5, 6, 789000000, time.UTC)
	deadline := at.Add(time.Hour)
	cases := []status.Record{
		{Class: "C", Run: "6b0ec8af62f70a375c883ad0", AgentID: "a", Thread: "t", State: status.Running, Updated: at},
		{Class: "C", Run: "r", AgentID: "a", Thread: "t", State: status.Completed, Updated: at.Truncate(time.Second)},
		{Class: "C", Run: "r", AgentID: "a", Thread: "t", State: status.Pending, Updated: time.Date(2026, 1, 2, 3, 4, 5, 1, time.UTC)},
		{Class: "C<&>", Run: "r\"q", AgentID: "ü", Thread: "t\\", State: status.Running, Updated: at},
		{Class: "C", Run: "r", AgentID: "a", Thread: "t", State: status.Failed, Error: "boom", Updated: at},
		{Class: "C", Run: "r", AgentID: "a", Thread: "t", State: status.Waiting, Question: &status.Question{EventID: "e", Event: "HITLRequestEvent", Deadline: &deadline}, Updated: at},
		{Class: "C", Run: "r", AgentID: "a", Thread: "t", State: status.Compensated, Compensated: []string{"s"}, Updated: at},
		{Class: "C", Run: "r", AgentID: "a", Thread: "t", State: status.Running, Updated: time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, st := range cases {
		want, wantErr := json.Marshal(st)
		got, err := encodeStatus(&st)
		if (err != nil) != (wantErr != nil) || string(got) != string(want) {
			t.Errorf("encode(%+v)\n got %s, %v\nwant %s, %v", st, got, err, want, wantErr)
		}
	}
}

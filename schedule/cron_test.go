package schedule_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/schedule"
	"github.com/saap-go/agent/store"
	"github.com/saap-go/agent/store/memory"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func every(expr, tz string) schedule.Cron {
	c, err := schedule.ParseCron(expr, tz)
	if err != nil {
		panic(err)
	}
	return c
}

func TestOccurrences(t *testing.T) {
	for _, tc := range []struct {
		name         string
		cron         schedule.Cron
		after, until string
		want         []string
	}{
		{"quarter hours, open at the start", every("*/15 * * * *", ""), "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
			[]string{"2026-03-02T10:15:00Z", "2026-03-02T10:30:00Z", "2026-03-02T10:45:00Z", "2026-03-02T11:00:00Z"}},
		{"weekdays at noon", every("0 12 * * 1-5", ""), "2026-03-06T00:00:00Z", "2026-03-10T00:00:00Z", // Fri .. Tue
			[]string{"2026-03-06T12:00:00Z", "2026-03-09T12:00:00Z"}},
		{"local time across daylight saving", every("0 7 * * *", "Europe/Zurich"), "2026-03-28T00:00:00Z", "2026-03-31T00:00:00Z",
			[]string{"2026-03-28T06:00:00Z", "2026-03-29T05:00:00Z", "2026-03-30T05:00:00Z"}},
		{"a time the clocks skip runs at the change", every("30 2 * * *", "Europe/Zurich"), "2026-03-28T00:00:00Z", "2026-03-31T00:00:00Z",
			[]string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"a time that occurs twice runs once", every("30 2 * * *", "Europe/Zurich"), "2026-10-24T00:00:00Z", "2026-10-27T00:00:00Z",
			[]string{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"an hour of * is real time when the clocks go back", every("*/30 * * * *", "Europe/Zurich"), "2026-10-24T23:59:00Z", "2026-10-25T02:00:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z"}},
		{"an hour of * is real time when the clocks go forward", every("0 * * * *", "Europe/Zurich"), "2026-03-28T23:30:00Z", "2026-03-29T02:00:00Z",
			[]string{"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		{"never matches", every("0 0 30 2 *", ""), "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z", nil},
		{"empty window", every("* * * * *", ""), "2026-01-01T00:00:30Z", "2026-01-01T00:00:59Z", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cron.Occurrences(utc(tc.after), utc(tc.until), 0)
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, g := range got {
				s = append(s, g.Format(time.RFC3339))
			}
			if strings.Join(s, " ") != strings.Join(tc.want, " ") {
				t.Errorf("occurrences\n got %v\nwant %v", s, tc.want)
			}
		})
	}
	got, _ := every("* * * * *", "").Occurrences(utc("2026-01-01T00:00:00Z"), utc("2026-01-02T00:00:00Z"), 10)
	if len(got) != 10 {
		t.Errorf("limit 10 gave %d occurrences", len(got))
	}
}

func TestCronRefusesBadInput(t *testing.T) {
	for _, c := range []schedule.Cron{
		{},
		{Minute: "0", Hour: "12", DayOfMonth: "*", Month: "*"},
		{Minute: "61", Hour: "*", DayOfMonth: "*", Month: "*", DayOfWeek: "*"},
		{Minute: "0 1", Hour: "*", DayOfMonth: "*", Month: "*", DayOfWeek: "*"},
		{Minute: "@hourly", Hour: "*", DayOfMonth: "*", Month: "*", DayOfWeek: "*"},
		{Minute: "0", Hour: "*", DayOfMonth: "*", Month: "*", DayOfWeek: "*", Timezone: "Mars/Olympus"},
		{Minute: "0", Hour: "*", DayOfMonth: "*", Month: "*", DayOfWeek: "*", Timezone: "Local"},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	for _, expr := range []string{"", "* * * *", "* * * * * *", "x * * * *"} {
		if _, err := schedule.ParseCron(expr, ""); err == nil {
			t.Errorf("ParseCron(%q): no error", expr)
		}
	}
}

func TestCronJSON(t *testing.T) {
	var c schedule.Cron
	in := `{"minute":"0","hour":"7","day_of_month":"*","month":"*","day_of_week":"1-5","timezone":"Europe/Zurich"}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if c.Expression() != "0 7 * * 1-5" || c.Timezone != "Europe/Zurich" || c.Validate() != nil {
		t.Errorf("decoded %+v", c)
	}
	out, _ := json.Marshal(c)
	if string(out) != in {
		t.Errorf("encoded %s", out)
	}
	if err := json.Unmarshal([]byte(`"30 6 * * *"`), &c); err != nil || c.Minute != "30" || c.Hour != "6" || c.Timezone != "" {
		t.Errorf("expression string: %+v, %v", c, err)
	}
	for _, bad := range []string{`"nope"`, `42`, `[]`} {
		if err := json.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"* * * * *", "*/5 1-3 L * MON", "0 0 30 2 *", "1,2,3 */2 ? * 7"} {
		f.Add(s, "")
	}
	f.Add("0 7 * * *", "Europe/Zurich")
	f.Fuzz(func(t *testing.T, expr, tz string) {
		c, err := schedule.ParseCron(expr, tz)
		if err != nil {
			return
		}
		if _, err := c.Occurrences(utc("2026-01-01T00:00:00Z"), utc("2026-01-02T00:00:00Z"), 100); err != nil {
			t.Fatalf("%q parsed but does not compile: %v", expr, err)
		}
		// Across both clock changes of a zone: ascending, in the window.
		c.Timezone = "Europe/Zurich"
		after, until := utc("2026-03-28T00:00:00Z"), utc("2026-10-27T00:00:00Z")
		occ, err := c.Occurrences(after, until, 500)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range occ {
			if !o.After(after) || o.After(until) || i > 0 && !o.After(occ[i-1]) {
				t.Fatalf("%q: occurrence %d %v out of order or window", expr, i, o)
			}
		}
	})
}

func TestFromConfig(t *testing.T) {
	s, ok, err := schedule.FromConfig("Digest", "daily",
		json.RawMessage(`{"agent_id":"daily","name":{"en":"Daily"},"cron":{"minute":"0","hour":"7","day_of_month":"*","month":"*","day_of_week":"*"}}`))
	if err != nil || !ok || s.Class != "Digest" || s.AgentID != "daily" || s.Cron.Expression() != "0 7 * * *" {
		t.Errorf("FromConfig = %+v, %v, %v", s, ok, err)
	}
	for _, none := range []string{`{}`, `{"cron":null}`} {
		if _, ok, err := schedule.FromConfig("Digest", "daily", json.RawMessage(none)); ok || err != nil {
			t.Errorf("%s: ok %v, err %v", none, ok, err)
		}
	}
	for _, bad := range []string{`[]`, `{"cron":{"minute":"0"}}`, `{"cron":"not cron"}`, `{"cron":7}`} {
		if _, ok, err := schedule.FromConfig("Digest", "daily", json.RawMessage(bad)); ok || err == nil {
			t.Errorf("%s: ok %v, err %v", bad, ok, err)
		}
	}
	if _, _, err := schedule.FromConfig("Di.gest", "daily", json.RawMessage(`{"cron":"* * * * *"}`)); err == nil {
		t.Error("a class that is no subject token: no error")
	}
}

func TestStoreSource(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	src := schedule.NewStoreSource(st, "")
	a := schedule.Schedule{Class: "Digest", AgentID: "daily", Cron: every("0 7 * * *", "Europe/Zurich")}
	b := schedule.Schedule{Class: "Digest", AgentID: "weekly", Cron: every("0 7 * * 1", "")}
	for _, s := range []schedule.Schedule{b, a} {
		if err := src.Put(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.Put(ctx, schedule.Schedule{Class: "Digest", AgentID: "x"}); err == nil {
		t.Error("Put took a schedule without a cron")
	}
	got, err := src.Schedules(ctx)
	if err != nil || len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Schedules = %+v, %v", got, err)
	}
	// Another name is another list; a changed schedule replaces the old.
	if other, _ := schedule.NewStoreSource(st, "other").Schedules(ctx); len(other) != 0 {
		t.Errorf("another name sees %v", other)
	}
	a.Cron = every("15 7 * * *", "")
	_ = src.Put(ctx, a)
	if err := src.Delete(ctx, "Digest", "weekly"); err != nil {
		t.Fatal(err)
	}
	if err := src.Delete(ctx, "Digest", "absent"); err != nil {
		t.Errorf("deleting an absent schedule: %v", err)
	}
	got, err = src.Schedules(ctx)
	if err != nil || len(got) != 1 || got[0] != a {
		t.Errorf("after Put and Delete: %+v, %v", got, err)
	}
	// A saved profile keeps its schedule; one saved without drops it.
	if err := src.PutConfig(ctx, "Digest", "weekly", []byte(`{"cron":"0 7 * * 1"}`)); err != nil {
		t.Fatal(err)
	}
	if got, _ := src.Schedules(ctx); len(got) != 2 || got[1].AgentID != "weekly" || got[1].Cron.Expression() != "0 7 * * 1" {
		t.Errorf("after PutConfig: %+v", got)
	}
	if err := src.PutConfig(ctx, "Digest", "weekly", []byte(`{"cron":null}`)); err != nil {
		t.Fatal(err)
	}
	if err := src.PutConfig(ctx, "Digest", "weekly", []byte(`{"cron":{"minute":"0"}}`)); err == nil {
		t.Error("PutConfig took a malformed schedule")
	}
	if got, _ := src.Schedules(ctx); len(got) != 1 {
		t.Errorf("after PutConfig without a schedule: %+v", got)
	}
	// An entry that does not decode is reported, and hides no other.
	if err := st.Set(ctx, store.ThreadContext("saap.scheduler.default", "schedules"), "Broken.x", []byte("{")); err != nil {
		t.Fatal(err)
	}
	got, err = src.Schedules(ctx)
	if err == nil || !strings.Contains(err.Error(), "Broken.x") || len(got) != 1 || got[0] != a {
		t.Errorf("with a broken entry: %+v, %v", got, err)
	}
}

package schedule

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // a schedule names an IANA zone; containers often ship no zoneinfo

	"github.com/robfig/cron/v3"
)

// Cron is a profile's schedule as the platform stores it under the
// profile's "cron" key: the five positions of a standard cron expression
// and the IANA zone they are read in. The positions are separate fields
// because the configuration form edits them one by one.
type Cron struct {
	Minute     string `json:"minute"`
	Hour       string `json:"hour"`
	DayOfMonth string `json:"day_of_month"`
	Month      string `json:"month"`
	DayOfWeek  string `json:"day_of_week"`
	// Timezone is the IANA zone, such as "Europe/Zurich"; empty means UTC.
	Timezone string `json:"timezone,omitempty"`
}

// ParseCron splits a five-field cron expression ("0 12 * * 1-5") into a
// Cron read in zone tz (empty: UTC) and checks it.
func ParseCron(expr, tz string) (Cron, error) {
	f := strings.Fields(expr)
	if len(f) != 5 {
		return Cron{}, fmt.Errorf("schedule: cron expression %q has %d fields, want 5 (minute hour day-of-month month day-of-week)", expr, len(f))
	}
	c := Cron{Minute: f[0], Hour: f[1], DayOfMonth: f[2], Month: f[3], DayOfWeek: f[4], Timezone: tz}
	if _, err := c.compile(); err != nil {
		return Cron{}, err
	}
	return c, nil
}

// UnmarshalJSON reads the platform's object form and, leniently, a plain
// expression string ("0 12 * * *", read in UTC).
func (c *Cron) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		p, err := ParseCron(s, "")
		if err != nil {
			return err
		}
		*c = p
		return nil
	}
	type plain Cron
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("schedule: cron: want an object {minute, hour, day_of_month, month, day_of_week, timezone} or an expression string: %w", err)
	}
	*c = Cron(p)
	return nil
}

// Expression returns the five positions as one cron expression.
func (c Cron) Expression() string {
	return strings.Join([]string{c.Minute, c.Hour, c.DayOfMonth, c.Month, c.DayOfWeek}, " ")
}

// Validate reports a missing or malformed position and an unknown zone.
// Every position is required, as the platform requires them: a default
// would turn an unrecognised value into runs nobody configured.
func (c Cron) Validate() error {
	_, err := c.compile()
	return err
}

// parser reads the five standard positions; no seconds, no descriptors
// (@hourly): the form has exactly these five.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// spec is a compiled Cron.
type spec struct {
	s cron.Schedule
}

func (c Cron) compile() (spec, error) {
	for _, p := range []struct{ name, v string }{
		{"minute", c.Minute}, {"hour", c.Hour}, {"day_of_month", c.DayOfMonth}, {"month", c.Month}, {"day_of_week", c.DayOfWeek},
	} {
		if p.v == "" {
			return spec{}, fmt.Errorf("schedule: cron position %s is missing", p.name)
		}
		if strings.ContainsFunc(p.v, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
			return spec{}, fmt.Errorf("schedule: cron position %s %q contains white space", p.name, p.v)
		}
	}
	loc := time.UTC
	if c.Timezone != "" {
		l, err := time.LoadLocation(c.Timezone)
		if err != nil || c.Timezone == "Local" {
			return spec{}, fmt.Errorf("schedule: unknown timezone %q", c.Timezone)
		}
		loc = l
	}
	s, err := parser.Parse(c.Expression())
	if err != nil {
		return spec{}, fmt.Errorf("schedule: cron expression %q: %w", c.Expression(), err)
	}
	ss, ok := s.(*cron.SpecSchedule)
	if !ok {
		return spec{}, errors.New("schedule: cron expression did not compile to a spec")
	}
	ss.Location = loc
	return spec{s: ss}, nil
}

// next returns the first occurrence strictly after t, in UTC, and false
// when there is none (an expression that never matches, as "0 0 30 2 *").
func (s spec) next(t time.Time) (time.Time, bool) {
	n := s.s.Next(t)
	if n.IsZero() {
		return time.Time{}, false
	}
	return n.UTC(), true
}

// Occurrences returns the occurrences of c in (after, until], in UTC and
// ascending order, at most limit of them (limit ≤ 0: no limit). The window
// is open at the start so that an occurrence at a tick's end is not
// returned again by the next tick, whose window starts there.
func (c Cron) Occurrences(after, until time.Time, limit int) ([]time.Time, error) {
	s, err := c.compile()
	if err != nil {
		return nil, err
	}
	return s.between(after, until, limit), nil
}

func (s spec) between(after, until time.Time, limit int) []time.Time {
	var out []time.Time
	for t := after; limit <= 0 || len(out) < limit; {
		n, ok := s.next(t)
		if !ok || n.After(until) {
			break
		}
		out = append(out, n)
		t = n
	}
	return out
}

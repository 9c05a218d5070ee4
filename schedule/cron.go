package schedule

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	s   *cron.SpecSchedule
	loc *time.Location
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
	return spec{s: ss, loc: loc}, nil
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
		t = n
		if s.wallClock() && s.repeated(n) {
			continue
		}
		out = append(out, n)
	}
	if !s.wallClock() {
		return out
	}
	if late := s.skippedByGaps(after, until); len(late) > 0 {
		out = append(out, late...)
		slices.SortFunc(out, time.Time.Compare)
		out = slices.CompactFunc(out, time.Time.Equal)
		if limit > 0 && len(out) > limit {
			out = out[:limit]
		}
	}
	return out
}

// Daylight saving. A schedule with a fixed hour ("30 2 * * *") means a wall
// clock time, so it runs once a day even when the clocks change, as cron
// does: a time that occurs twice (the clocks go back) runs the first time
// only, and a time that does not occur (the clocks go forward) runs at the
// change. A schedule whose hour is "*" means real time and is left alone:
// "*/15 * * * *" runs every fifteen minutes through the change.

const starBit = 1 << 63 // robfig/cron marks a "*" field with it

func (s spec) wallClock() bool { return s.s.Hour&starBit == 0 && s.loc != time.UTC }

// repeated reports whether the wall clock time of t occurred before, in the
// two hours before t: t is in an hour the clocks went back over.
func (s spec) repeated(t time.Time) bool {
	w := wall(t.In(s.loc))
	for _, d := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		if wall(t.Add(-d).In(s.loc)) == w {
			return true
		}
	}
	return false
}

func wall(t time.Time) [5]int {
	return [5]int{t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute()}
}

// skippedByGaps returns, for every change in (after, until] where the
// clocks went forward over a time the schedule matches, the instant of the
// change.
func (s spec) skippedByGaps(after, until time.Time) []time.Time {
	var out []time.Time
	const step = 7 * 24 * time.Hour // zones change their offset at most a few times a year
	for a := after; a.Before(until); {
		b := a.Add(step)
		if b.After(until) {
			b = until
		}
		if t, gap, ok := s.change(a, b); ok {
			if gap > 0 && s.matchesGap(t, gap) && t.After(after) && !t.After(until) {
				out = append(out, t.UTC())
			}
			a = t
			continue
		}
		a = b
	}
	return out
}

// change finds the first instant in (a, b] whose offset differs from a's,
// and by how much it grew.
func (s spec) change(a, b time.Time) (time.Time, time.Duration, bool) {
	off := func(t time.Time) int { _, o := t.In(s.loc).Zone(); return o }
	oa := off(a)
	if off(b) == oa {
		return time.Time{}, 0, false
	}
	lo, hi := a, b // off(lo) == oa, off(hi) != oa
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if !mid.After(lo) {
			break
		}
		if off(mid) == oa {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, time.Duration(off(hi)-oa) * time.Second, true
}

// matchesGap reports whether the schedule matches a minute of the wall
// clock times the change at t skipped.
func (s spec) matchesGap(t time.Time, gap time.Duration) bool {
	_, before := t.Add(-time.Second).In(s.loc).Zone()
	w := t.Add(time.Duration(before) * time.Second).UTC() // the first skipped wall time, as a UTC value
	for m := time.Duration(0); m < gap; m += time.Minute {
		if s.matches(w.Add(m)) {
			return true
		}
	}
	return false
}

// matches tests w's fields against the schedule, as robfig/cron does.
func (s spec) matches(w time.Time) bool {
	bit := func(f uint64, v int) bool { return f&(1<<uint(v)) != 0 }
	dom, dow := bit(s.s.Dom, w.Day()), bit(s.s.Dow, int(w.Weekday()))
	day := dom || dow
	if s.s.Dom&starBit != 0 || s.s.Dow&starBit != 0 {
		day = dom && dow
	}
	return day && bit(s.s.Minute, w.Minute()) && bit(s.s.Hour, w.Hour()) && bit(s.s.Month, int(w.Month()))
}

package event

import (
	"fmt"
	"time"
)

// ParseTime reads a datetime in either form the reference writes:
// Python's str(datetime), "2026-08-11 12:00:00+00:00"
// (optionally with .ffffff, optionally without offset, read as UTC), and
// ISO 8601, "2026-08-11T12:00:00Z" or with an offset.
func ParseTime(s string) (time.Time, error) {
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid datetime %q", s)
}

var timeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02",
}

// FormatTime writes t as Python's str(datetime) of an aware datetime:
// "YYYY-MM-DD HH:MM:SS[.ffffff]+HH:MM".
func FormatTime(t time.Time) string {
	if t.Nanosecond()/1000 != 0 {
		return t.Format("2006-01-02 15:04:05.000000-07:00")
	}
	return t.Format("2006-01-02 15:04:05-07:00")
}

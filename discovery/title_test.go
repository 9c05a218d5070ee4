package discovery

import "testing"

// TestPyTitle pins pydantic's field titles: name.title().replace('_', ' ').strip().
func TestPyTitle(t *testing.T) {
	for in, want := range map[string]string{
		"event_id":         "Event Id",
		"http_status_code": "Http Status Code",
		"URL":              "Url",
		"a1b":              "A1B",
		"_private":         "Private",
		"x2y_z":            "X2Y Z",
		"fps":              "Fps",
		"ümlaut_feld":      "Ümlaut Feld",
	} {
		if got := pyTitle(in); got != want {
			t.Errorf("pyTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

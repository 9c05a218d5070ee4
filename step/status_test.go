package step_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/saap-go/agent/step"
)

type coded int

func (c coded) Error() string   { return fmt.Sprintf("coded %d", int(c)) }
func (c coded) HTTPStatus() int { return int(c) }

func TestHTTPStatus(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		ok   bool
	}{
		{nil, 0, false},
		{errors.New("plain"), 0, false},
		{coded(429), 429, true},
		{fmt.Errorf("wrapped: %w", coded(503)), 503, true},
		{step.WithUserMessage(coded(413), "too long"), 413, true},
		{errors.Join(errors.New("a"), coded(502)), 502, true},
		{coded(200), 0, false}, // not an error status
	} {
		code, ok := step.HTTPStatus(tc.err)
		if code != tc.code || ok != tc.ok {
			t.Errorf("HTTPStatus(%v) = %d, %v; want %d, %v", tc.err, code, ok, tc.code, tc.ok)
		}
	}
}

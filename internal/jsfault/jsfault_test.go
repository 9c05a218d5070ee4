package jsfault_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/internal/jsfault"
)

func TestIs(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&jetstream.APIError{Code: 500, ErrorCode: 10049, Description: "error creating store for stream"}, true},
		{fmt.Errorf("wrapped: %w", &jetstream.APIError{Code: 503}), true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10058}, false},
		{jetstream.ErrBucketExists, false},
	} {
		if got := jsfault.Is(tc.err); got != tc.want {
			t.Errorf("Is(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// A creation is tried again, three calls in all, while the server fails
// inside; a refusal or a cancelled context is not tried again.
func TestRetry(t *testing.T) {
	fault := &jetstream.APIError{Code: 500, ErrorCode: 10049, Description: "error creating store for stream"}
	refusal := &jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "stream name already in use with a different configuration"}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		errs      []error // what the calls return, in turn; nil once they run out
		wantCalls int
		want      error
	}{
		{"succeeds at once", context.Background(), nil, 1, nil},
		{"fault then success", context.Background(), []error{fault, fault}, 3, nil},
		{"faults throughout", context.Background(), []error{fault, fault, fault, fault}, 3, fault},
		{"wrapped fault", context.Background(), []error{fmt.Errorf("create: %w", fault)}, 2, nil},
		{"refusal", context.Background(), []error{refusal, nil}, 1, refusal},
		{"cancelled", cancelled, []error{fault, nil}, 1, fault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := jsfault.Retry(tc.ctx, func() error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			if calls != tc.wantCalls || !errors.Is(err, tc.want) {
				t.Fatalf("%d calls, error %v; want %d calls, error %v", calls, err, tc.wantCalls, tc.want)
			}
		})
	}
}

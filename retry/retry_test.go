package retry_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/saap-go/agent/retry"
)

func TestDelay(t *testing.T) {
	for _, c := range []struct {
		p    retry.Policy
		want []time.Duration
	}{
		{retry.Infrastructure, []time.Duration{1, 2, 4, 8, 16, 30, 30}},
		{retry.Policy{}, []time.Duration{1, 2, 4}},
		{retry.Policy{InitialInterval: 2 * time.Second, BackoffCoefficient: 1}, []time.Duration{2, 2, 2}},
		{retry.Policy{InitialInterval: time.Second, BackoffCoefficient: 3, MaxInterval: 5 * time.Second}, []time.Duration{1, 3, 5, 5}},
		{retry.Policy{InitialInterval: time.Second, MaxInterval: 150 * time.Second}, []time.Duration{1, 2, 4, 8, 16, 32, 64, 128, 150}},
	} {
		for i, w := range c.want {
			if got := c.p.Delay(i + 1); got != w*time.Second {
				t.Errorf("%+v: Delay(%d) = %s, want %s", c.p, i+1, got, w*time.Second)
			}
		}
	}
	// A large n neither overflows nor loops long.
	if got := retry.Infrastructure.Delay(1 << 30); got != 30*time.Second {
		t.Errorf("Delay(1<<30) = %s", got)
	}
}

func TestRetry(t *testing.T) {
	errBad := errors.New("bad")
	p := retry.Policy{MaxAttempts: 3, NonRetryable: func(err error) bool { return errors.Is(err, errBad) }}
	other := errors.New("flaky")
	for _, c := range []struct {
		err  error
		n    int
		want bool
	}{
		{other, 1, true}, {other, 2, true}, {other, 3, false},
		{nil, 1, false},
		{errBad, 1, false}, {fmt.Errorf("wrapped: %w", errBad), 1, false},
		{retry.Permanent(other), 1, false}, {fmt.Errorf("wrapped: %w", retry.Permanent(other)), 1, false},
	} {
		if got := p.Retry(c.err, c.n); got != c.want {
			t.Errorf("Retry(%v, %d) = %v, want %v", c.err, c.n, got, c.want)
		}
	}
	if got := (retry.Policy{}).Retry(other, retry.DefaultMaxAttempts); got {
		t.Error("the default policy retried its last attempt")
	}
	if retry.Permanent(nil) != nil {
		t.Error("Permanent(nil) is not nil")
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []retry.Policy{
		{MaxAttempts: -1}, {InitialInterval: -time.Second}, {MaxInterval: -time.Second},
		{BackoffCoefficient: 0.5}, {InitialInterval: time.Minute, MaxInterval: time.Second},
	} {
		if p.Validate() == nil {
			t.Errorf("%+v validated", p)
		}
	}
	if err := (retry.Policy{}).Validate(); err != nil {
		t.Errorf("the zero policy: %v", err)
	}
}

// A step that calls a flaky service: five attempts, 2 s apart at first and
// at most a minute, never retrying a refusal the service means.
func Example() {
	errRefused := errors.New("refused")
	p := retry.Policy{
		MaxAttempts:     5,
		InitialInterval: 2 * time.Second,
		MaxInterval:     time.Minute,
		NonRetryable:    func(err error) bool { return errors.Is(err, errRefused) },
	}
	// step.New(fetch, step.Retry(p))
	for n := 1; n < p.Attempts(); n++ {
		fmt.Printf("after attempt %d: wait %s\n", n, p.Delay(n))
	}
	fmt.Println("retry a refusal:", p.Retry(errRefused, 1))
	// Output:
	// after attempt 1: wait 2s
	// after attempt 2: wait 4s
	// after attempt 3: wait 8s
	// after attempt 4: wait 16s
	// retry a refusal: false
}

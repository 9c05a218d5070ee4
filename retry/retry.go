// Package retry says how often, and how far apart, something that failed is
// tried again. A step's policy (step.Retry) and the runtime's own retries of
// an unavailable bus or store are both a Policy.
//
// A step's attempts are its trigger's deliveries, which the stream's server
// counts: a runner killed between two attempts loses no count, and a runner
// killed during an attempt spends that attempt.
package retry

import (
	"errors"
	"time"
)

// Policy is a retry policy: an exponential backoff between attempts and a
// bound on their number.
type Policy struct {
	// MaxAttempts is the number of attempts in all, the first included.
	// 1 means no retry; 0 means DefaultMaxAttempts.
	MaxAttempts int
	// InitialInterval is the wait before the second attempt (default 1 s).
	InitialInterval time.Duration
	// BackoffCoefficient multiplies the wait after each attempt (default 2;
	// 1 keeps it constant).
	BackoffCoefficient float64
	// MaxInterval caps the wait (default 100 × InitialInterval).
	MaxInterval time.Duration
	// NonRetryable reports errors that fail at once, whatever the attempts
	// left. Errors made with Permanent are never retried either.
	NonRetryable func(error) bool
}

// DefaultMaxAttempts is the number of attempts of a Policy whose
// MaxAttempts is 0.
const DefaultMaxAttempts = 3

// Infrastructure is how the runtime retries an operation of an unavailable
// bus or store: 1 s, doubling, at most 30 s apart, until the runner's outage
// budget is spent.
var Infrastructure = Policy{InitialInterval: time.Second, BackoffCoefficient: 2, MaxInterval: 30 * time.Second}

// Attempts is p's number of attempts in all, defaults applied.
func (p Policy) Attempts() int {
	if p.MaxAttempts <= 0 {
		return DefaultMaxAttempts
	}
	return p.MaxAttempts
}

// Delay is the wait after the n-th failed attempt (n from 1) before the
// next one.
func (p Policy) Delay(n int) time.Duration {
	d := p.InitialInterval
	if d <= 0 {
		d = time.Second
	}
	c := p.BackoffCoefficient
	if c < 1 {
		c = 2
	}
	limit := p.MaxInterval
	if limit <= 0 {
		limit = 100 * d
	}
	f := float64(d)
	for i := 1; i < n && f < float64(limit); i++ {
		f *= c
	}
	return min(time.Duration(f), limit)
}

// Retry reports whether the n-th attempt (n from 1), which failed with err,
// is tried again.
func (p Policy) Retry(err error, n int) bool {
	if err == nil || n >= p.Attempts() || IsPermanent(err) {
		return false
	}
	return p.NonRetryable == nil || !p.NonRetryable(err)
}

// Validate reports a policy whose values make no sense.
func (p Policy) Validate() error {
	switch {
	case p.MaxAttempts < 0:
		return errors.New("retry: MaxAttempts is negative")
	case p.InitialInterval < 0:
		return errors.New("retry: InitialInterval is negative")
	case p.MaxInterval < 0:
		return errors.New("retry: MaxInterval is negative")
	case p.BackoffCoefficient != 0 && p.BackoffCoefficient < 1:
		return errors.New("retry: BackoffCoefficient is below 1 (the wait would shrink)")
	case p.MaxInterval > 0 && p.InitialInterval > p.MaxInterval:
		return errors.New("retry: InitialInterval is above MaxInterval")
	}
	return nil
}

type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// Permanent marks err as one that no retry can cure: a step that returns it
// fails at once, whatever its policy.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanent{err}
}

// IsPermanent reports whether err, or an error it wraps, was made with
// Permanent.
func IsPermanent(err error) bool {
	var p *permanent
	return errors.As(err, &p)
}

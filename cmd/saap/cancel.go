package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/topic"
)

// cmdRunCancel asks a run to stop and, with -wait, waits until its status
// says it has.
func cmdRunCancel(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "run cancel", "run cancel [-class C] [-reason R] [-wait D] RUN", `  saap run cancel 0123456789abcdef01234567
  saap run cancel -class EchoAgent -reason "wrong question" -wait 0 0123456789abcdef01234567
`)
	class := fs.String("class", "", "the run's agent class (default: ask every class with an agent stream)")
	reason := fs.String("reason", "", "why the run is cancelled (kept with its RunCancelledEvent)")
	wait := fs.Duration("wait", 10*time.Second, "how long to wait for the run's status to turn cancelled; 0 returns once the request is sent")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: want one RUN id", errUsage)
	}
	run := fs.Arg(0)
	if err := topic.ValidateToken("run_id", run); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := status.CheckCancel(*reason, ""); err != nil {
		return fmt.Errorf("%w: -reason: %v", errUsage, err)
	}
	b, err := e.connect()
	if err != nil {
		return err
	}
	defer b.Close()
	classes, err := classesOf(ctx, b, *class)
	if err != nil {
		return err
	}
	by := "saap"
	if u := os.Getenv("USER"); u != "" {
		by = "saap:" + u
	}
	var st status.Record
	found := ""
	for _, c := range classes {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err = status.Cancel(rctx, b, c, run, *reason, by)
		cancel()
		if errors.Is(err, status.ErrNotFound) && *class == "" {
			continue // another class's run, or a class without a live replica
		}
		if errors.Is(err, status.ErrEnded) {
			fmt.Fprintf(e.stdout, "run %s of %s has ended (%s): nothing to cancel\n", run, c, st.State)
			return nil
		}
		if err != nil {
			return fmt.Errorf("cancel run %s of %s: %w", run, c, err)
		}
		found = c
		break
	}
	if found == "" {
		return fmt.Errorf("run %s: no live replica of %d classes knows it", run, len(classes))
	}
	fmt.Fprintf(e.stdout, "cancel requested: run %s of %s (it was %s)\n", run, found, st.State)
	if *wait <= 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		cur, err := status.Request(wctx, b, found, run)
		if err == nil && cur.State.Ended() {
			line := "status: " + string(cur.State)
			if len(cur.Compensated) > 0 {
				line += fmt.Sprintf("; compensated %v", cur.Compensated)
			}
			if len(cur.CompensationFailed) > 0 {
				line += fmt.Sprintf("; compensation given up for %v", cur.CompensationFailed)
			}
			fmt.Fprintln(e.stdout, line)
			return nil
		}
		select {
		case <-tick.C:
		case <-wctx.Done():
			return fmt.Errorf("run %s: not ended within %s (last status %s)", run, *wait, cur.State)
		}
	}
}

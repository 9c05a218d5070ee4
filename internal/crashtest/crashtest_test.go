package crashtest_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/crashtest"
)

func TestMain(m *testing.M) {
	crashtest.Main(map[string]func() int{
		"wait": func() int {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
			defer stop()
			fmt.Println("hello from", os.Getenv("GREETING"))
			crashtest.Ready()
			<-ctx.Done()
			return 0
		},
		"fail": func() int { return 7 },
	})
	os.Exit(m.Run())
}

func TestChildReadyStopAndKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	c := crashtest.Start(t, "graceful", "wait", "GREETING=parent")
	c.WaitReady(ctx)
	if err := c.Stop(time.Minute); err != nil {
		t.Fatalf("Stop: %v\n%s", err, c.Output())
	}
	if got := c.Output(); got != "hello from parent\n" {
		t.Errorf("output %q", got)
	}

	k := crashtest.Start(t, "killed", "wait")
	k.WaitReady(ctx)
	k.Kill()
	select {
	case <-k.Done():
	default:
		t.Fatal("Kill returned before the process was gone")
	}
	k.Kill() // killing an exited child does nothing
}

func TestChildExitStatus(t *testing.T) {
	c := crashtest.Start(t, "failing", "fail")
	<-c.Done()
	if err := c.Stop(time.Second); err == nil {
		t.Error("a helper that exits 7 reported success")
	}
}

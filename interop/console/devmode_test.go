package console

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// startDevmode builds and starts examples/devmode, as `go run
// ./examples/devmode` does, and returns its console URL.
func startDevmode(t *testing.T, ctx context.Context) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "devmode")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/saap-go/agent/examples/devmode").CombinedOutput(); err != nil {
		t.Fatalf("go build examples/devmode: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, bin, "-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "NATS_URL=", "REDIS_URL=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	url := ""
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "console" {
			url = f[1]
		}
		if len(f) >= 1 && f[0] == "try" {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return url
		}
	}
	t.Fatalf("examples/devmode ended before its banner: %v", sc.Err())
	return ""
}

// What `go run ./examples/devmode` serves, in the browser: the question
// stays in the transcript, the answer's row names Welcome (Hello and
// Welcome both emit Answered), and the timeline wraps at 1400 and 800 px
// instead of cutting rows off. It also takes the README's screenshot
// (docs/dev-console.png with SAAP_SCREENSHOTS=docs).
func TestConsoleDevmode(t *testing.T) {
	browser := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	console := startDevmode(t, ctx)

	actx, stopAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(browser),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 800),
	)
	defer stopAlloc()
	bctx, stopBrowser := chromedp.NewContext(actx)
	defer stopBrowser()
	out := artifacts(t)
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(out, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	until := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			shot("devmode-failed.png")
			t.Fatalf("waiting for %s (%s): %v", what, js, err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	send := func(sel, text string) {
		t.Helper()
		if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS(sel+" input"), text), chromedp.Click(chromedp.CSS(sel+" button"))); err != nil {
			t.Fatal(err)
		}
	}

	if err := chromedp.Do(bctx, chromedp.Navigate(console)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	until("the agent class", `!!document.querySelector('#classes li.selected[data-class="Greeter"]')`)
	until("the event stream", `document.body.dataset.following === "1"`)

	send("#send", "Hello there, this message is long enough that its timeline row has to wrap to be read")
	until("the streamed answer", `[...document.querySelectorAll('#chat .msg.assistant')].some(e => e.textContent.startsWith("Hello! You said:"))`)
	send("#send", "name, please: ask me for it, in a message that is long enough to wrap in the timeline too")
	until("the question's form", `!!document.querySelector('#questions form input')`)
	until("the question in the transcript", `[...document.querySelectorAll('#chat .msg.question')].some(e => e.textContent === "What is your name?")`)
	send("#questions", "Ada Lovelace")
	until("the welcome", `[...document.querySelectorAll('#chat .msg.assistant')].some(e => e.textContent === "Welcome, Ada Lovelace!")`)
	until("the answer in the timeline", `[...document.querySelectorAll('#timeline .ev[data-name="Answered"][data-type="control"] .sum')].some(e => e.textContent.includes("Welcome, Ada Lovelace!"))`)

	// The answer's row: Welcome on the response, once.
	note := eval(`[...document.querySelectorAll('#timeline .ev[data-name="Answered"][data-type="control"]')].find(r => r.textContent.includes("Welcome, Ada")).querySelector(".dur").textContent`)
	if !strings.HasPrefix(note, " ← Welcome on HumanInTheLoopInputResponseEvent, ") || strings.Contains(note, "re-run") {
		t.Errorf("the answer's step note = %q", note)
	}
	if got := eval(`document.querySelectorAll('#chat .msg.question').length + ""`); got != "1" {
		t.Errorf("%s questions in the transcript, want 1", got)
	}

	// Nothing of a row is cut off: no row, and not the timeline, is wider
	// than its box, and every step note ends inside the timeline.
	const overflow = `(() => {
  const tl = document.querySelector('#timeline'), r = tl.getBoundingClientRect();
  const bad = [];
  if (tl.scrollWidth > tl.clientWidth + 1) bad.push("timeline " + tl.scrollWidth + ">" + tl.clientWidth);
  for (const row of tl.querySelectorAll('.ev')) {
    if (row.scrollWidth > row.clientWidth + 1) bad.push(row.dataset.name + " " + row.scrollWidth + ">" + row.clientWidth);
    for (const n of row.querySelectorAll('.dur, .sum')) {
      const b = n.getBoundingClientRect();
      if (b.right > r.right + 1 || b.left < r.left - 1) bad.push(row.dataset.name + " note outside");
    }
  }
  return bad.join("; ");
})()`
	for _, w := range []int64{1400, 800} {
		if err := chromedp.Do(bctx, chromedp.EmulateViewport(w, 800)); err != nil {
			t.Fatal(err)
		}
		if bad := eval(overflow); bad != "" {
			t.Errorf("at %d px the timeline cuts off: %s", w, bad)
		}
		shot(fmt.Sprintf("devmode-%d.png", w))
	}
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1400, 800)); err != nil {
		t.Fatal(err)
	}
	shot("dev-console.png")
}

package console

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/saap-go/agent/dev"
	"github.com/saap-go/agent/internal/devdemo"
)

// chromium returns the browser to drive, or skips the test.
func chromium(t *testing.T) string {
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		t.Skipf("no Chromium at %s (apt-get install chromium, or set CHROMIUM): the console's browser test is skipped", path)
	}
	return path
}

// artifacts is where the screenshots go: $SAAP_SCREENSHOTS, or the test's
// temporary directory.
func artifacts(t *testing.T) string {
	if dir := os.Getenv("SAAP_SCREENSHOTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

func TestConsoleChatTimelineAndQuestion(t *testing.T) {
	browser := chromium(t)
	t.Setenv("NATS_URL", "")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := dev.Start(ctx, dev.Config{Addr: "127.0.0.1:0", Out: new(bytes.Buffer)}, &devdemo.Echo{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	var browserLog bytes.Buffer
	actx, stopAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(browser),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 800),
		chromedp.CombinedOutput(&browserLog),
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
		path := filepath.Join(out, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
	until := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			shot("failed.png")
			t.Fatalf("waiting for %s (%s): %v\nbrowser output:\n%s", what, js, err, browserLog.String())
		}
	}
	texts := func(sel string) []string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(`+"`"+sel+"`"+`)].map(e => e.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	// The console loads the classes, draws the graph and follows the bus.
	if err := chromedp.Do(bctx, chromedp.Navigate(s.ConsoleURL())); err != nil {
		t.Fatalf("navigate: %v\nbrowser output:\n%s", err, browserLog.String())
	}
	until("the agent class", `!!document.querySelector('#classes li.selected[data-class="EchoAgent"]')`)
	until("the workflow graph", `document.querySelectorAll('#graph svg g.node').length === 5 && !!document.querySelector('#graph g[data-node="Clean"]')`)
	until("the event stream", `document.body.dataset.following === "1"`)

	// A message: its chunks stream into one assistant bubble, and the run
	// appears in the timeline with control and display events marked.
	if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS("#message"), "hello console"), chromedp.Click(chromedp.CSS("#send button"))); err != nil {
		t.Fatal(err)
	}
	until("the streamed answer", `[...document.querySelectorAll('#chat .msg.assistant')].some(e => e.textContent === "You said: hello console")`)
	until("the run in the timeline", `document.querySelectorAll('#timeline .run .ev[data-name="ChunkEvent"][data-type="display"]').length === 4 && !!document.querySelector('#timeline .ev[data-name="Replied"][data-type="control"]')`)
	if got := texts("#timeline .ev[data-name=Cleaned] .dur"); len(got) != 1 || !strings.HasPrefix(got[0], " ← Clean on UserMessageEvent, ") {
		t.Errorf("the Cleaned row's step note = %q", got)
	}
	shot("console-chat.png")

	// A question: the answer form appears, the answer continues the run.
	if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS("#message"), "ask me"), chromedp.Click(chromedp.CSS("#send button"))); err != nil {
		t.Fatal(err)
	}
	until("the question's form", `!!document.querySelector('#questions form[data-event="HumanInTheLoopInputRequestEvent"] input')`)
	if got := texts("#questions form p"); len(got) != 1 || !strings.HasPrefix(got[0], "What is your name?") {
		t.Errorf("question = %q", got)
	}
	if got := texts("#chat .msg.question"); len(got) != 1 || got[0] != "What is your name?" {
		t.Errorf("the transcript's question = %q", got)
	}
	shot("console-question.png")
	if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS("#questions input"), "Ada"), chromedp.Click(chromedp.CSS("#questions button"))); err != nil {
		t.Fatal(err)
	}
	until("the answer's reply", `[...document.querySelectorAll('#chat .msg.assistant')].some(e => e.textContent === "Nice to meet you, Ada!")`)
	until("the answer in the timeline", `!!document.querySelector('#timeline .ev[data-name="HumanInTheLoopInputResponseEvent"][data-type="control"]')`)
	if n := len(texts("#questions form")); n != 0 {
		t.Errorf("%d question forms still open after the answer", n)
	}
	shot("console-answered.png")

	// A question asked in a run the console did not start (here by a
	// client of the gateway, as curl would) gets a form too, and the
	// answer continues that run.
	resp, err := http.Post(s.URL()+"/agents/EchoAgent/curl/UserMessageEvent", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"ask from curl"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: %s", resp.Status)
	}
	until("the other run's question", `[...document.querySelectorAll('#questions form p')].some(p => p.textContent.includes("EchoAgent/curl"))`)
	if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS("#questions input"), "Bob"), chromedp.Click(chromedp.CSS("#questions button"))); err != nil {
		t.Fatal(err)
	}
	until("the other run's reply", `[...document.querySelectorAll('#timeline .ev[data-name="Replied"] .sum')].some(e => e.textContent.includes("Nice to meet you, Bob!"))`)
}

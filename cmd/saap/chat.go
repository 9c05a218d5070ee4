package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/internal/eventline"
)

func cmdChat(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "chat", "chat [-wait D] [-json] [-thread ID] CLASS[/instance] [text]", `  saap chat EchoAgent "Hello"           # one message, its streamed answer, then exit
  saap chat EchoAgent/support            # a conversation: one message a line, Ctrl-D ends
  saap chat -thread 65f0c1d2e3a4b5c6d7e8f901 EchoAgent   # show a thread's history, then continue it
  echo Ada | saap chat EchoAgent "ask"   # a question the agent asks is answered from stdin
  saap chat -json EchoAgent "Hello" | jq -r .event_name

After each answer, standard error names the run: saap run show RUN shows
its timeline. A conversation's messages are kept on the NATS server (the
gateway's thread history); a conversation names its thread on standard
error when it ends, and -thread continues it.
`)
	wait := fs.Duration("wait", 5*time.Second, "how long to wait for the class to answer discovery")
	asJSON := fs.Bool("json", false, "print each event of the stream as one line of JSON instead of the text")
	thread := fs.String("thread", "", "continue this thread (24 hex characters): show its history, then send only the new messages")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: missing CLASS[/instance]", errUsage)
	}
	class, id, _ := strings.Cut(fs.Arg(0), "/")
	if id == "" {
		id = "cli"
	}
	text := strings.Join(fs.Args()[1:], " ")
	if *thread != "" && !event.IsObjectID(*thread) {
		return fmt.Errorf("%w: -thread must be 24 lower-case hex characters, got %q", errUsage, *thread)
	}

	b, err := e.connect()
	if err != nil {
		return err
	}
	defer b.Close()
	// A gateway of our own, on a loopback port, does the protocol's work:
	// ids, the user, the stream of the thread, the question's checks.
	// Threads and their history live on the server, shared with
	// saap-gateway, so that a later saap chat -thread finds them.
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	threads, err := gateway.NewKVStore(sctx, b.JetStream(), gateway.KVConfig{})
	if err != nil {
		scancel()
		return err
	}
	history, err := gateway.NewJetStreamHistory(sctx, b.JetStream(), gateway.HistoryConfig{})
	scancel()
	if err != nil {
		return err
	}
	g, err := gateway.New(gateway.Config{Bus: b, Auth: gateway.Anonymous(event.UserIdentity{ID: "saap-cli", Name: "saap chat", Email: "cli@localhost", Roles: []string{"user"}}),
		Threads: threads, History: history,
		DiscoveryWindow: *wait, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RateLimit: -1, MaxRunsPerUser: -1, StatusRateLimit: -1})
	if err != nil {
		return err
	}
	if err := knownClass(ctx, b, class); err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, *wait)
	done := e.waiting("looking for agent class %s", class)
	_, err = g.Discover(dctx, class)
	done()
	cancel()
	if err != nil {
		return fmt.Errorf("agent class %s did not answer discovery within %s", class, *wait)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := gateway.NewServer(g, gateway.ServerConfig{})
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	c := &chat{e: e, base: "http://" + ln.Addr().String(), class: class, id: id, in: bufio.NewScanner(e.stdin), json: *asJSON}
	if *thread != "" {
		if err := c.resume(ctx, *thread); err != nil {
			return err
		}
	}
	if text != "" {
		return c.say(ctx, text)
	}
	defer func() {
		if c.thread != "" {
			fmt.Fprintln(c.e.stderr, c.e.paint(dim, fmt.Sprintf("thread %s (saap chat -thread %s %s continues it)", c.thread, c.thread, fs.Arg(0))))
		}
	}()
	for {
		if !c.json {
			fmt.Fprint(e.stdout, e.paint(bold, "> "))
		}
		if !c.in.Scan() {
			fmt.Fprintln(e.stdout)
			return c.in.Err()
		}
		if line := strings.TrimSpace(c.in.Text()); line != "" {
			if err := c.say(ctx, line); err != nil {
				return err
			}
		}
	}
}

// chat is one conversation: its thread and its history.
type chat struct {
	e               *env
	base            string
	class, id       string
	thread, display string
	history         []map[string]string
	in              *bufio.Scanner
	json            bool
	run             string // of the last post
	// resumed: the gateway holds the history, so only new messages go
	// out, with reconstruct_history.
	resumed bool
}

// resume shows the history of thread and continues it.
func (c *chat) resume(ctx context.Context, thread string) error {
	after := ""
	for {
		url := c.base + "/api/v1/saap/threads/" + thread + "/messages?limit=500"
		if after != "" {
			url += "&after=" + after
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("thread %s is not known (or not one of saap chat's)", thread)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("the gateway answered %s: %s", resp.Status, bytes.TrimSpace(data))
		}
		var page struct {
			Messages []gateway.HistoryEntry `json:"messages"`
			Next     string                 `json:"next"`
		}
		if err := json.Unmarshal(data, &page); err != nil {
			return fmt.Errorf("the thread's history: %w", err)
		}
		for _, entry := range page.Messages {
			c.show(entry)
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	c.thread, c.display, c.resumed = thread, event.NewID(), true
	return nil
}

// show prints one message of a thread's history.
func (c *chat) show(entry gateway.HistoryEntry) {
	if c.json {
		raw, _ := json.Marshal(entry)
		line, _ := json.Marshal(chatLine{Run: entry.Run, Name: "HistoryMessage", Event: raw})
		fmt.Fprintf(c.e.stdout, "%s\n", line)
		return
	}
	m, err := entry.ChatMessage()
	if err != nil {
		return
	}
	if m.Role == event.RoleUser {
		fmt.Fprintln(c.e.stdout, c.e.paint(bold, "> ")+m.Content())
		return
	}
	fmt.Fprintln(c.e.stdout, m.Content())
}

// chatLine is one event of `saap chat -json`.
type chatLine struct {
	Run   string          `json:"run_id"`
	Name  string          `json:"event_name"`
	Event json.RawMessage `json:"event"`
}

// say sends a user message and follows the run, answering the questions it
// asks, until it ends.
func (c *chat) say(ctx context.Context, text string) error {
	c.history = append(c.history, map[string]string{"role": "user", "content": text})
	// Name the run, also when it failed, for saap run show.
	defer func() {
		if c.run != "" {
			fmt.Fprintln(c.e.stderr, c.e.paint(dim, "run "+c.run))
		}
	}()
	c.run = ""
	msgs := c.history
	if c.resumed {
		msgs = msgs[len(msgs)-1:]
	}
	last, answer, err := c.post(ctx, "UserMessageEvent", map[string]any{"messages": msgs})
	for err == nil && last != nil && event.IsHITLRequest(last.ev) {
		q, qerr := event.UnmarshalAs[event.HumanInTheLoopRequestEvent](last.raw)
		if qerr != nil {
			return qerr
		}
		if !c.json {
			fmt.Fprintf(c.e.stdout, "%s ", c.e.paint(yellow+bold, "? "+q.Question))
		}
		if !c.in.Scan() {
			if !c.json {
				fmt.Fprintln(c.e.stdout)
			}
			return errors.New("the agent asked a question and standard input ended")
		}
		reply := strings.TrimSpace(c.in.Text())
		if !c.e.echoed && !c.json {
			fmt.Fprintln(c.e.stdout)
		}
		var resp any = reply
		if q.HITLType == event.HITLConfirmation {
			resp = strings.HasPrefix(strings.ToLower(reply), "y")
		}
		name := strings.Replace(event.Name(last.ev), "RequestEvent", "ResponseEvent", 1)
		last, answer, err = c.post(ctx, name, map[string]any{"response": resp, "request_event": json.RawMessage(last.raw)})
	}
	if err != nil {
		return err
	}
	if answer != "" {
		c.history = append(c.history, map[string]string{"role": "assistant", "content": answer})
	}
	return nil
}

type received struct {
	ev  event.Event
	raw []byte
}

// post sends one event and prints the stream of the run: chunks as they
// come, thoughts and tool calls dimmed on lines of their own. It returns
// the terminal event and the answer's text.
func (c *chat) post(ctx context.Context, name string, body any) (*received, string, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, "", err
	}
	url := fmt.Sprintf("%s/agents/%s/%s/%s/stream", c.base, c.class, c.id, name)
	if c.thread != "" {
		url += "?thread_id=" + c.thread + "&display_id=" + c.display
		if c.resumed && name == "UserMessageEvent" {
			url += "&reconstruct_history=true"
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return nil, "", fmt.Errorf("the gateway answered %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	c.thread, c.display = resp.Header.Get("X-Thread-Id"), resp.Header.Get("X-Display-Id")
	c.run = resp.Header.Get("X-Run-Id")
	var last *received
	var answer strings.Builder
	midLine := false
	newline := func() {
		if midLine {
			fmt.Fprintln(c.e.stdout)
			midLine = false
		}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		ev, err := event.Unmarshal([]byte(d))
		if err != nil {
			return nil, "", fmt.Errorf("the stream carried an undecodable event: %w", err)
		}
		last = &received{ev, []byte(d)}
		if c.json {
			line, _ := json.Marshal(chatLine{Run: c.run, Name: event.Name(ev), Event: json.RawMessage(d)})
			fmt.Fprintf(c.e.stdout, "%s\n", line)
			if k := kindOf(ev, "display_event"); k == "chunk" {
				answer.WriteString(ev.(*event.ChunkEvent).Content)
			} else if k == "error" {
				x, _ := event.UnmarshalAs[event.ExceptionEvent]([]byte(d))
				return last, "", fmt.Errorf("the run failed: %s", x.Message)
			}
			continue
		}
		switch k := kindOf(ev, "display_event"); k {
		case "chunk":
			chunk := ev.(*event.ChunkEvent).Content
			fmt.Fprint(c.e.stdout, chunk)
			answer.WriteString(chunk)
			midLine = true
		case "thought", "tool":
			newline()
			fmt.Fprintln(c.e.stdout, c.e.paint(dim, fmt.Sprintf("  %s %s", k, eventline.Summary(ev, []byte(d)))))
		case "error":
			newline()
			x, _ := event.UnmarshalAs[event.ExceptionEvent]([]byte(d))
			return last, "", fmt.Errorf("the run failed: %s", x.Message)
		case "stop":
			if answer.Len() == 0 {
				s := eventline.Summary(ev, []byte(d))
				fmt.Fprint(c.e.stdout, s)
				answer.WriteString(s)
				midLine = true
			}
		}
	}
	newline()
	if err := sc.Err(); err != nil {
		return nil, "", fmt.Errorf("reading the stream: %w", err)
	}
	if last == nil {
		return nil, "", errors.New("the stream ended without an event")
	}
	return last, answer.String(), nil
}

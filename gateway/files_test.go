package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/files"
	"github.com/saap-go/agent/files/objstore"
	_ "github.com/saap-go/agent/files/pdf"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/step"
)

// fileStores are the stores the file tests run on, each with its bus: the
// in-memory pair, the Object Store of an embedded nats-server, and that of
// NATS_URL when it is set.
var fileStores = []struct {
	name string
	new  func(t *testing.T) (bus.Bus, files.Store)
}{
	{"memory", func(t *testing.T) (bus.Bus, files.Store) { return bustest.NewMemory(t), files.NewMemory() }},
	{"nats", func(t *testing.T) (bus.Bus, files.Store) { b := bustest.NewNATS(t); return b, objectStore(t, b) }},
	{"nats-external", func(t *testing.T) (bus.Bus, files.Store) {
		b := bustest.NewExternalNATS(t)
		return b, objectStore(t, b)
	}},
}

func objectStore(t testing.TB, b *natsbus.Bus) files.Store {
	t.Helper()
	bucket := "files_" + bustest.Unique()
	s, err := objstore.New(context.Background(), b.JetStream(), objstore.Config{Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.JetStream().DeleteObjectStore(context.Background(), bucket) })
	return s
}

// upload posts one file as multipart/form-data; thread, if not empty, is
// the thread_id field.
func upload(t testing.TB, srv *httptest.Server, token, name, contentType string, data []byte, thread string) (int, map[string]any) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if thread != "" {
		_ = mw.WriteField("thread_id", thread)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, name))
	h.Set("Content-Type", contentType)
	pw, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = pw.Write(data)
	_ = mw.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/saap/files", &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func getFile(t *testing.T, srv *httptest.Server, token, id string) (int, []byte, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/saap/files/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data, resp.Header
}

// citingModel answers a question about attached files by quoting the
// sentence of its prompt that mentions revenue, naming the file: it can
// only cite what reached it.
func citingModel() *llmtest.Provider {
	return llmtest.Func(func(req *llm.Request) *llmtest.Turn {
		var prompt string
		for _, m := range req.Messages {
			for _, b := range m.Content {
				prompt += b.Text
			}
		}
		var file, quote string
		for _, line := range strings.Split(prompt, "\n") {
			if rest, ok := strings.CutPrefix(line, "--- "); ok {
				file, _, _ = strings.Cut(rest, " (")
			}
			if strings.Contains(line, "Revenue") {
				quote = line
			}
		}
		if quote == "" {
			return llmtest.Reply("I see no figures.")
		}
		return llmtest.Reply(fmt.Sprintf("According to %s: %q", file, quote))
	})
}

// fileAgent reads the message's files within a budget and asks the model.
func fileAgent(t *testing.T, class string, store files.Store, model llm.Provider) *step.Workflow {
	return workflow2(t, class, func(ctx step.Context, msg *event.UserMessageEvent) (*event.LLMStopEvent, error) {
		texts, err := files.ReadAll(ctx, store, msg.Files, 2000)
		if err != nil {
			return nil, err
		}
		question := msg.Messages[len(msg.Messages)-1].Content()
		call, err := llm.StreamTo(ctx, model, &llm.Request{Model: "m", Messages: []llm.Message{
			llm.UserText(files.Format(texts) + "\n\nQuestion: " + question),
		}})
		if err != nil {
			return nil, err
		}
		return call.StopEvent(), nil
	})
}

func workflow2(t *testing.T, class string, fn func(step.Context, *event.UserMessageEvent) (*event.LLMStopEvent, error)) *step.Workflow {
	t.Helper()
	w, err := step.NewWorkflow(class, step.New(fn, step.Name("Answer")))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// eicar is the standard anti-virus test string.
const eicar = `X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`

// TestFiles is the acceptance test of attachments, on each store and bus:
// upload, the agent reads the file, the answer cites it; another user can
// neither read the file nor make an agent read it; oversize, wrong-type
// and infected uploads are refused.
func TestFiles(t *testing.T) {
	for _, s := range fileStores {
		t.Run(s.name, func(t *testing.T) { testFiles(t, s.new) })
	}
}

func testFiles(t *testing.T, newStore func(t *testing.T) (bus.Bus, files.Store)) {
	b, store := newStore(t)
	class := "Files" + bustest.Unique()
	answer := engineAgent(t, b, fileAgent(t, class, store, citingModel()))
	threads := gateway.NewMemoryThreads()
	scanned := 0
	gw, err := gateway.New(gateway.Config{Bus: b, Files: store, Threads: threads, MaxFileSize: 64 << 10, RateLimit: -1,
		Logger: slog.New(slog.DiscardHandler),
		Auth:   gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice, tokenBob: bob}),
		Scanner: files.ScannerFunc(func(_ context.Context, info files.Info, r io.Reader) error {
			scanned++
			data, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			if bytes.Contains(data, []byte("EICAR-STANDARD-ANTIVIRUS-TEST-FILE")) {
				return &files.RejectedError{Reason: "infected: Eicar-Test-Signature"}
			}
			return nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.AddClass(answer); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()

	report, err := os.ReadFile("../files/pdf/testdata/report.pdf")
	if err != nil {
		t.Fatal(err)
	}
	// The client's header says octet-stream; the content says PDF.
	code, up := upload(t, srv, tokenAlice, "report.pdf", "application/octet-stream", report, "")
	if code != http.StatusCreated || up["file_type"] != "application/pdf" || up["filename"] != "report.pdf" || up["size"] != float64(len(report)) {
		t.Fatalf("upload: %d %v", code, up)
	}
	id := up["file_id"].(string)
	if files.CheckID(id) != nil {
		t.Fatalf("file id %q is no UUID4", id)
	}
	ref, _ := json.Marshal(map[string]any{"filename": up["filename"], "file_type": up["file_type"], "file_id": id})
	ask := func(token, thread string) (*http.Response, map[string]any) {
		path := "/agents/" + class + "/dev/UserMessageEvent"
		if thread != "" {
			path += "?thread_id=" + thread
		}
		resp := post(t, srv, token, path, `{"messages":[{"role":"user","content":"How did revenue do?"}],"files":[`+string(ref)+`]}`)
		return resp, decodeJSON(t, resp.Body)
	}

	resp, got := ask(tokenAlice, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ask: %d %v", resp.StatusCode, got)
	}
	stop, err := event.Unmarshal(mustJSON(t, got))
	if err != nil {
		t.Fatal(err)
	}
	llmStop, ok := stop.(*event.LLMStopEvent)
	if !ok || len(llmStop.OutputMessages) == 0 {
		t.Fatalf("answer %T %v", stop, got)
	}
	if text := llmStop.OutputMessages[0].Content(); text != `According to report.pdf: "Revenue grew by 17 percent."` {
		t.Errorf("the answer does not cite the file: %q", text)
	}
	thread := resp.Header.Get("X-Thread-Id")

	// The uploader reads the file back; nobody else does, nor makes an
	// agent read it.
	if code, data, h := getFile(t, srv, tokenAlice, id); code != http.StatusOK || !bytes.Equal(data, report) ||
		h.Get("Content-Type") != "application/pdf" || !strings.HasPrefix(h.Get("Content-Disposition"), "attachment") {
		t.Errorf("alice reads her file: %d, %d bytes, %v", code, len(data), h)
	}
	if code, data, _ := getFile(t, srv, tokenBob, id); code != http.StatusNotFound || bytes.Contains(data, []byte("%PDF")) {
		t.Errorf("bob reads alice's file: %d %s", code, data)
	}
	if resp, got := ask(tokenBob, ""); resp.StatusCode != http.StatusNotFound || got["field"] != "files[0].file_id" {
		t.Errorf("bob's message names alice's file: %d %v, want 404", resp.StatusCode, got)
	}
	if code, _, _ := getFile(t, srv, tokenAlice, files.NewID()); code != http.StatusNotFound {
		t.Errorf("unknown file: %d", code)
	}
	if code, _, _ := getFile(t, srv, tokenAlice, "..%2F..%2Fetc"); code != http.StatusNotFound {
		t.Errorf("bad id: %d", code)
	}

	// A file uploaded into a thread is the thread's members' too; only
	// its members may upload into it.
	if code, got := upload(t, srv, tokenBob, "x.txt", "text/plain", []byte("bob's"), thread); code != http.StatusForbidden {
		t.Errorf("bob uploads into alice's thread: %d %v", code, got)
	}
	code, shared := upload(t, srv, tokenAlice, "notes.md", "text/markdown", []byte("# Notes\n\nRevenue grew by 17 percent."), thread)
	if code != http.StatusCreated || shared["file_type"] != "text/markdown" || shared["thread_id"] != thread {
		t.Fatalf("upload into the thread: %d %v", code, shared)
	}
	sharedID := shared["file_id"].(string)
	if code, _, _ := getFile(t, srv, tokenBob, sharedID); code != http.StatusNotFound {
		t.Errorf("bob, not a member yet: %d", code)
	}
	if err := threads.AddMember(context.Background(), thread, bob.ID); err != nil {
		t.Fatal(err)
	}
	if code, data, _ := getFile(t, srv, tokenBob, sharedID); code != http.StatusOK || !strings.Contains(string(data), "Revenue") {
		t.Errorf("bob, a member now: %d %s", code, data)
	}
	if code, _, _ := getFile(t, srv, tokenBob, id); code != http.StatusNotFound {
		t.Errorf("bob reads alice's file uploaded outside the thread: %d", code)
	}

	// Refusals.
	for _, tt := range []struct {
		name, ctype string
		data        []byte
		want        int
		detail      string
	}{
		{"big.txt", "text/plain", bytes.Repeat([]byte("a"), 64<<10+1), http.StatusRequestEntityTooLarge, "larger than the limit"},
		{"tool.exe", "application/octet-stream", append([]byte("MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff"), make([]byte, 64)...), http.StatusUnsupportedMediaType, "application/octet-stream"},
		{"fake.png", "image/png", report, http.StatusUnsupportedMediaType, "declared image/png, but the content is application/pdf"},
		{"archive.txt", "text/plain", []byte("PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00"), http.StatusUnsupportedMediaType, "application/zip"},
		{"eicar.txt", "text/plain", []byte(eicar), http.StatusUnprocessableEntity, "infected: Eicar-Test-Signature"},
		{"empty.txt", "text/plain", nil, http.StatusBadRequest, "empty"},
		{`..\..\boot.ini`, "text/plain", []byte("x"), http.StatusBadRequest, "filename"},
	} {
		code, got := upload(t, srv, tokenAlice, tt.name, tt.ctype, tt.data, "")
		if detail, _ := got["detail"].(string); code != tt.want || !strings.Contains(detail, tt.detail) {
			t.Errorf("%s: %d %v, want %d with %q", tt.name, code, got, tt.want, tt.detail)
		}
	}
	if scanned != 3 { // report.pdf, notes.md, eicar.txt
		t.Errorf("the scanner saw %d uploads, want 3", scanned)
	}

	// Not multipart; no credentials.
	if resp := post(t, srv, tokenAlice, "/api/v1/saap/files", `{"file":"x"}`); resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("JSON upload: %d", resp.StatusCode)
	}
	if code, _ := upload(t, srv, "nobody", "a.txt", "text/plain", []byte("x"), ""); code != http.StatusUnauthorized {
		t.Errorf("unauthenticated upload: %d", code)
	}

	// Deleting: the uploader only.
	del := func(token, id string) int {
		req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/api/v1/saap/files/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := del(tokenBob, sharedID); code != http.StatusForbidden {
		t.Errorf("bob deletes alice's shared file: %d", code)
	}
	if code := del(tokenAlice, id); code != http.StatusNoContent {
		t.Errorf("alice deletes her file: %d", code)
	}
	if code, _, _ := getFile(t, srv, tokenAlice, id); code != http.StatusNotFound {
		t.Errorf("deleted file: %d", code)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestFilesOff: without a Store the routes do not exist.
func TestFilesOff(t *testing.T) {
	gw, err := gateway.New(gateway.Config{Bus: bustest.NewMemory(t), Auth: gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice})})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	if code, got := upload(t, srv, tokenAlice, "a.txt", "text/plain", []byte("x"), ""); code != http.StatusNotFound {
		t.Errorf("upload without a store: %d %v", code, got)
	}
}

// TestOpenAIImagesAndFiles: the OpenAI endpoint takes image parts (a data:
// URL becomes inline image bytes) and file parts naming uploads, through
// the official client.
func TestOpenAIImagesAndFiles(t *testing.T) {
	b := bustest.NewNATS(t)
	store := objectStore(t, b)
	class := "Vision" + bustest.Unique()
	answer := engineAgent(t, b, workflow2(t, class, func(ctx step.Context, msg *event.UserMessageEvent) (*event.LLMStopEvent, error) {
		var seen []string
		for _, blk := range msg.Messages[len(msg.Messages)-1].Blocks {
			if img, ok := blk.(*event.ImageBlock); ok {
				seen = append(seen, fmt.Sprintf("image %s %d bytes", *img.ImageMimetype, len(img.Image)))
			}
		}
		texts, err := files.ReadAll(ctx, store, msg.Files, 100)
		if err != nil {
			return nil, err
		}
		for _, tx := range texts {
			seen = append(seen, "file "+tx.Info.Name+": "+tx.Text)
		}
		call, err := llm.StreamTo(ctx, llmtest.New(llmtest.Reply(strings.Join(seen, "; "))), &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("?")}})
		if err != nil {
			return nil, err
		}
		return call.StopEvent(), nil
	}))
	gw, err := gateway.New(gateway.Config{Bus: b, Files: store, RateLimit: -1,
		Auth: gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice, tokenBob: bob})})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.AddClass(answer); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	code, up := upload(t, srv, tokenAlice, "memo.txt", "text/plain", []byte("The memo says hello."), "")
	if code != http.StatusCreated {
		t.Fatalf("upload %d %v", code, up)
	}
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte(png))
	parts := func(fileID string) []openai.ChatCompletionContentPartUnionParam {
		return []openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is this?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL}),
			openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{FileID: openai.String(fileID)}),
		}
	}
	for _, who := range []struct {
		token string
		ok    bool
	}{{tokenAlice, true}, {tokenBob, false}} {
		client := openai.NewClient(optionsFor(srv, who.token)...)
		res, err := client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
			Model:    class + "/dev",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(parts(up["file_id"].(string)))},
		})
		if !who.ok {
			if err == nil || !strings.Contains(err.Error(), "404") {
				t.Errorf("bob names alice's file: %v %v", res, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("image image/png %d bytes; file memo.txt: The memo says hello.", len(png))
		if got := res.Choices[0].Message.Content; got != want {
			t.Errorf("agent saw %q\nwant %q", got, want)
		}
	}
	// A data: URL that is no image is refused before any agent sees it.
	client := openai.NewClient(optionsFor(srv, tokenAlice)...)
	_, err = client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: class + "/dev",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("#!/bin/sh\nrm -rf /"))}),
		})},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, "not one of image/png") {
		t.Errorf("a script as an image: %v", err)
	}
}

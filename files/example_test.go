package files_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/files"
)

// A step reads the files a message references within a token budget and
// puts them before the question.
func ExampleReadAll() {
	ctx := context.Background()
	store := files.NewMemory()
	// The gateway's upload route does this (after its checks).
	info, _ := store.Put(ctx, files.Info{ID: files.NewID(), Name: "notes.md", ContentType: "text/markdown", Owner: "alice"},
		strings.NewReader("# Notes\n\nThe launch is on 3 March."))
	msg := &event.UserMessageEvent{Files: []event.UserUploadedFile{info.Ref()}}

	texts, err := files.ReadAll(ctx, store, msg.Files, 1000)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(files.Format(texts))
	// Output:
	// --- notes.md (34 bytes) ---
	// # Notes
	//
	// The launch is on 3 March.
}

// Sniff decides the type from the content; the client's header does not.
func ExampleSniff() {
	_, err := files.Sniff([]byte("%PDF-1.7\n..."), "image/png", "cat.png")
	fmt.Println(err)
	ct, _ := files.Sniff([]byte("# Title"), "application/octet-stream", "readme.md")
	fmt.Println(ct)
	// Output:
	// files: unsupported content type: declared image/png, but the content is application/pdf
	// text/markdown
}

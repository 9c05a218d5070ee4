// Package files keeps the files users attach to their messages and turns
// them into what a model can take: text within a token budget, or image and
// document content blocks.
//
// A message names its files with event.UserUploadedFile references
// (filename, file_type, file_id), as the reference platform's messages do;
// the bytes live in a Store. The gateway's upload route puts them there
// after checking size, type (sniffed from the content, not taken from the
// client's word) and, where the operator set one, a virus Scanner; the
// agent's steps read them back with Read, ReadAll or Blocks:
//
//	func (a *Agent) Answer(ctx step.Context, msg *event.UserMessageEvent) (*event.StopEvent, error) {
//		texts, err := files.ReadAll(ctx, a.Files, msg.Files, 4000)
//		...
//		prompt := files.Format(texts) + "\n\n" + msg.Messages[len(msg.Messages)-1].Content()
//
// Stores: NewMemory keeps files in the process (tests, one-process demos);
// package files/objstore keeps them in a JetStream Object Store on the same
// NATS as the bus; anything with Put, Get, Stat and Delete (an S3 bucket)
// can be a Store.
//
// Readers: plain text and Markdown are built in. HTML and PDF are in
// packages files/html and files/pdf, linked only by those who import them:
//
//	import (
//		_ "github.com/saap-go/agent/files/html"
//		_ "github.com/saap-go/agent/files/pdf"
//	)
//
// Register adds readers for other types.
package files

package llm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
)

func TestFromEventBlocks(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n....")
	got, skipped := llm.FromEventBlocks([]event.Block{
		&event.TextBlock{Text: "Look at "},
		&event.TextBlock{Text: "these."},
		&event.ImageBlock{URL: event.Str("https://example.com/a.jpg"), ImageMimetype: event.Str("image/jpeg")},
		&event.ImageBlock{URL: event.Str("data:image/gif;base64,R0lGODlh")},
		&event.ImageBlock{Image: png},
		&event.DocumentBlock{URL: event.Str("https://example.com/r.pdf"), Title: event.Str("r.pdf")},
		&event.DocumentBlock{URL: event.Str("data:text/plain,hello%20world")},
		&event.ImageBlock{Path: event.Str("/tmp/local.png")},
		&event.AudioBlock{URL: event.Str("https://example.com/a.mp3")},
		&event.RawBlock{Type: "thinking", Raw: json.RawMessage(`{"block_type":"thinking"}`)},
	})
	agentEqual(t, got, []llm.Block{
		llm.Text("Look at these."),
		{Kind: llm.BlockImage, URL: "https://example.com/a.jpg", MediaType: "image/jpeg"},
		{Kind: llm.BlockImage, Data: []byte("GIF89a"), MediaType: "image/gif"},
		{Kind: llm.BlockImage, Data: png, MediaType: "image/png"},
		{Kind: llm.BlockDocument, URL: "https://example.com/r.pdf", Title: "r.pdf"},
		{Kind: llm.BlockDocument, Data: []byte("hello world"), MediaType: "text/plain"},
	})
	agentEqual(t, skipped, 3)
}

// TestEventBlocksRoundTrip: images and documents go to chat-message
// blocks and back unchanged, and encode on the wire.
func TestEventBlocksRoundTrip(t *testing.T) {
	in := []llm.Block{
		llm.Text("Here:"),
		{Kind: llm.BlockImage, Data: []byte("\x89PNG\r\n\x1a\nxx"), MediaType: "image/png"},
		{Kind: llm.BlockImage, URL: "https://example.com/a.jpg"},
		{Kind: llm.BlockDocument, Data: []byte("%PDF-1.7"), MediaType: "application/pdf", Title: "a.pdf"},
		llm.ToolUse("c", "t", json.RawMessage(`{}`)),
	}
	blocks := llm.EventBlocks(in)
	agentEqual(t, len(blocks), 4)
	raw, err := event.MarshalValue(event.ChatMessage{Role: "assistant", AdditionalKwargs: map[string]json.RawMessage{}, Blocks: blocks})
	if err != nil {
		t.Fatal(err)
	}
	var back event.ChatMessage
	if err := event.UnmarshalValue(raw, &back); err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
	got, skipped := llm.FromEventBlocks(back.Blocks)
	agentEqual(t, got, in[:4])
	agentEqual(t, skipped, 0)
}

// TestAccumulateBlock: an image the model made is a block of its own,
// between the text around it; a block event without an image or document
// is refused.
func TestAccumulateBlock(t *testing.T) {
	img := llm.Block{Kind: llm.BlockImage, MediaType: "image/png", Data: []byte{1}}
	var a llm.Accumulator
	for _, ev := range []llm.StreamEvent{
		{Kind: llm.EventText, Index: 0, Text: "A map:"},
		{Kind: llm.EventBlock, Index: 1, Block: &img},
		{Kind: llm.EventText, Index: 2, Text: "Done."},
		{Kind: llm.EventStop, StopReason: llm.StopEndTurn},
	} {
		if err := a.Add(ev); err != nil {
			t.Fatal(err)
		}
	}
	agentEqual(t, a.Response().Message.Content, []llm.Block{llm.Text("A map:"), img, llm.Text("Done.")})
	for _, bad := range []llm.StreamEvent{
		{Kind: llm.EventBlock, Index: 0},
		{Kind: llm.EventBlock, Index: 0, Block: &llm.Block{Kind: llm.BlockText}},
		{Kind: llm.EventBlock, Index: 1, Block: &img},
	} {
		if err := a.Add(bad); err == nil {
			t.Errorf("Add(%+v) accepted", bad)
		}
	}
}

// TestStreamToKeepsImages: an image in the answer stays in the response,
// the call's record and the run's answer, and is not published as a chunk.
func TestStreamToKeepsImages(t *testing.T) {
	img := llm.Block{Kind: llm.BlockImage, URL: "https://example.com/made.png"}
	p := llmtest.New(llmtest.NewTurn().Text("Drawn:").Block(img))
	ctx := &fakeContext{Context: context.Background()}
	call, err := llm.StreamTo(ctx, p, &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("draw")}})
	if err != nil {
		t.Fatal(err)
	}
	agentEqual(t, call.Response.Message.Content, []llm.Block{llm.Text("Drawn:"), img})
	agentEqual(t, len(ctx.emitted), 1)
	out := call.StopEvent().OutputMessages[0]
	if len(out.Contents) != 2 || out.Contents[1].Type != "image" || *out.Contents[1].URL != img.URL {
		t.Errorf("answer contents %+v", out.Contents)
	}
	if _, err := event.Marshal(call.StopEvent()); err != nil {
		t.Error(err)
	}
}

// TestEventMessagesDocuments: a document has no content type in an
// LLMEvent's messages and is left out there; the text and image around it
// stay.
func TestEventMessagesDocuments(t *testing.T) {
	msgs := llm.EventMessages("", []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
		llm.Text("Summarise"),
		{Kind: llm.BlockDocument, Data: []byte("%PDF"), MediaType: "application/pdf"},
		{Kind: llm.BlockImage, URL: "https://example.com/a.png"},
	}}})
	if len(msgs) != 1 || len(msgs[0].Contents) != 2 || msgs[0].Contents[0].Text != "Summarise" || msgs[0].Contents[1].Type != "image" {
		t.Errorf("messages %+v", msgs)
	}
}

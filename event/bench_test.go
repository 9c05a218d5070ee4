package event

import (
	"encoding/json"
	"testing"
)

// Baselines: encoding/json on flat structs with the same fields as the
// events, measured in the same run (BENCHMARKS.md, "event: codec").

type flatLocale struct {
	De *string `json:"de"`
	En *string `json:"en"`
	Fr *string `json:"fr"`
	It *string `json:"it"`
}

type flatChunk struct {
	EventID            string      `json:"event_id"`
	CreatedAt          int64       `json:"created_at"`
	DisplayName        *flatLocale `json:"display_name"`
	DisplayDescription *flatLocale `json:"display_description"`
	Content            string      `json:"content"`
	ModelName          string      `json:"model_name"`
	EventName          string      `json:"_event_name"`
	ParentEventNames   []string    `json:"_parent_event_names"`
}

type flatTenant struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	AccessRules []string `json:"access_rules"`
}

type flatUser struct {
	ID                 string      `json:"id"`
	Name               string      `json:"name"`
	Email              string      `json:"email"`
	Roles              []string    `json:"roles"`
	ActingWithinTenant *flatTenant `json:"acting_within_tenant"`
}

type flatBlock struct {
	BlockType string `json:"block_type"`
	Text      string `json:"text"`
}

type flatMessage struct {
	Role             string                     `json:"role"`
	AdditionalKwargs map[string]json.RawMessage `json:"additional_kwargs"`
	Blocks           []flatBlock                `json:"blocks"`
}

type flatUserMessage struct {
	EventID            string             `json:"event_id"`
	CreatedAt          int64              `json:"created_at"`
	DisplayName        *flatLocale        `json:"display_name"`
	DisplayDescription *flatLocale        `json:"display_description"`
	Locale             string             `json:"locale"`
	User               *flatUser          `json:"user"`
	Messages           []flatMessage      `json:"messages"`
	Files              []UserUploadedFile `json:"files"`
	RequestedFeatures  []string           `json:"requested_features"`
	EventName          string             `json:"_event_name"`
	ParentEventNames   []string           `json:"_parent_event_names"`
}

func benchDecode(b *testing.B, file string) {
	data := readVector(b, file)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unmarshal(data); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEncode(b *testing.B, file string) {
	e, err := Unmarshal(readVector(b, file))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(e); err != nil {
			b.Fatal(err)
		}
	}
}

func benchStdDecode[T any](b *testing.B, file string) {
	data := readVector(b, file)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var v T
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func benchStdEncode[T any](b *testing.B, file string) {
	var v T
	if err := json.Unmarshal(readVector(b, file), &v); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(&v); err != nil {
			b.Fatal(err)
		}
	}
}

const (
	chunkFile = "c01-chunk-event.json"
	userFile  = "c03-user-message-event.json"
)

func BenchmarkDecodeChunk(b *testing.B)         { benchDecode(b, chunkFile) }
func BenchmarkDecodeChunkBaseline(b *testing.B) { benchStdDecode[flatChunk](b, chunkFile) }
func BenchmarkEncodeChunk(b *testing.B)         { benchEncode(b, chunkFile) }
func BenchmarkEncodeChunkBaseline(b *testing.B) { benchStdEncode[flatChunk](b, chunkFile) }
func BenchmarkDecodeUserMessage(b *testing.B)   { benchDecode(b, userFile) }
func BenchmarkDecodeUserMessageBaseline(b *testing.B) {
	benchStdDecode[flatUserMessage](b, userFile)
}
func BenchmarkEncodeUserMessage(b *testing.B) { benchEncode(b, userFile) }
func BenchmarkEncodeUserMessageBaseline(b *testing.B) {
	benchStdEncode[flatUserMessage](b, userFile)
}

var sinkID string

// BenchmarkNewID makes one event id (BENCHMARKS.md, "event: ids").
func BenchmarkNewID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkID = NewID()
	}
}

// BenchmarkNewIDParallel makes ids from every core at once: the generator's
// shared state is the contended part.
func BenchmarkNewIDParallel(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var id string
		for pb.Next() {
			id = NewID()
		}
		_ = id
	})
}

package event

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// TestDecodedDisplayTextsAreOwn: display texts equal to the type's
// defaults share the defaults' strings, but each decoded event owns its
// LocaleStrings: changing one changes neither the other text, nor another
// event, nor the defaults.
func TestDecodedDisplayTextsAreOwn(t *testing.T) {
	data := readVector(t, chunkFile)
	a := chunk(t, (data))
	b := chunk(t, (data))
	name, desc := defaultsOf(t, a)
	a.DisplayName.De = "geändert"
	a.DisplayDescription.En = "changed"
	*a.DisplayName = L("x", "y", "z", "w")
	if a.DisplayDescription.De != desc.De {
		t.Errorf("description followed the name: %q", a.DisplayDescription.De)
	}
	if *b.DisplayName != name || *b.DisplayDescription != desc {
		t.Errorf("another event changed: %+v %+v", *b.DisplayName, *b.DisplayDescription)
	}
	n2, d2 := defaultsOf(t, b)
	if n2 != name || d2 != desc || name.Fr != "Réponse Partielle" {
		t.Errorf("defaults changed: %+v %+v", n2, d2)
	}
	c := chunk(t, (bytes.Replace(data, []byte(`"display_name"`), []byte(`"x_display_name"`), 1)))
	c.DisplayName.De = "geändert"
	if b.DisplayName.De != name.De || c.DisplayDescription.De != desc.De {
		t.Errorf("a filled default is shared: %q %q", b.DisplayName.De, c.DisplayDescription.De)
	}
}

// TestEscapedStrings: escaped keys and values decode right although
// escaped text goes through one reused buffer.
func TestEscapedStrings(t *testing.T) {
	data := []byte(`{"_event_name": "ChunkEvent", "event_id": "66b9f0a1c2d3e4f5a6b7c8d9", "created_at": 1,
		"display_name": {"d\u0065": "\u00c4a", "en": "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9", "fr": null, "it": "\n"},
		"c\u006fntent": "a\"b", "model_name": "\u00e8", "k\u00e9y": {"\u00e9": ["\u00e8", "\u00ea"]}}`)
	ev := chunk(t, (data))
	want := L("Äa", string(bytes.Repeat([]byte("é"), 67)), "", "\n")
	if ev.DisplayName.De != want.De || ev.DisplayName.En != want.En || ev.DisplayName.Fr != "" || ev.DisplayName.It != want.It {
		t.Errorf("display_name = %+v", *ev.DisplayName)
	}
	if ev.Content != `a"b` || ev.ModelName != "è" {
		t.Errorf("content %q, model_name %q", ev.Content, ev.ModelName)
	}
	out := marshal(t, ev)
	if !bytes.Contains(out, []byte(`"kéy": {"\u00e9": ["\u00e8", "\u00ea"]}`)) {
		t.Errorf("unknown field not kept verbatim: %s", out)
	}
}

// TestFallbackParentsVerbatim: an unknown event keeps its received parent
// list as received, known names and unknown ones, in order.
func TestFallbackParentsVerbatim(t *testing.T) {
	data := []byte(`{"_event_name": "MyEvent", "_parent_event_names": ["MyEvent", "ChunkEvent", "Mine", "DisplayEvent", "BaseEvent"], "content": "x"}`)
	ev := unmarshal(t, data)
	want := []string{"MyEvent", "ChunkEvent", "Mine", "DisplayEvent", "BaseEvent"}
	if got := Parents(ev); !slices.Equal(got, want) {
		t.Errorf("Parents = %q, want %q", got, want)
	}
	if _, ok := ev.(*ChunkEvent); !ok {
		t.Errorf("decoded as %T, want *ChunkEvent", ev)
	}
}

// TestDecodeAllocations pins the allocations of decoding the benchmark
// vectors (BENCHMARKS.md, "event: codec").
func TestDecodeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	for file, want := range map[string]float64{chunkFile: 4, userFile: 20} {
		data := readVector(t, file)
		got := testing.AllocsPerRun(100, func() { _, _ = Unmarshal(data) })
		if got > want {
			t.Errorf("%s: %v allocations, want ≤ %v", file, got, want)
		}
	}
}

func chunk(t *testing.T, data []byte) *ChunkEvent {
	t.Helper()
	ev, err := UnmarshalAs[ChunkEvent](data)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func unmarshal(t *testing.T, data []byte) Event {
	t.Helper()
	ev, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func defaultsOf(t *testing.T, ev Event) (name, desc LocaleString) {
	t.Helper()
	typ, ok := TypeOf(ev)
	if !ok {
		t.Fatalf("%T not registered", ev)
	}
	name, desc, ok = typ.DisplayDefaults()
	if !ok {
		t.Fatalf("%T has no display defaults", ev)
	}
	return name, desc
}

// TestDecodedLists: a list is sized to its items, an empty list is non-nil
// and usable, null is nil.
func TestDecodedLists(t *testing.T) {
	ev := unmarshal(t, readVector(t, userFile)).(*UserMessageEvent)
	if ev.RequestedFeatures == nil || len(ev.RequestedFeatures) != 0 {
		t.Errorf("requested_features [] decoded as %#v", ev.RequestedFeatures)
	}
	ev.RequestedFeatures = append(ev.RequestedFeatures, "x")
	if len(ev.Messages) != 1 || cap(ev.Messages) != 1 || len(ev.Messages[0].Blocks) != 1 {
		t.Errorf("messages: len %d cap %d", len(ev.Messages), cap(ev.Messages))
	}
	if ev.Files != nil {
		t.Errorf("files null decoded as %#v", ev.Files)
	}
	three := unmarshal(t, []byte(`{"_event_name": "UserMessageEvent", "requested_features": ["a", "b", "c"]}`)).(*UserMessageEvent)
	if !slices.Equal(three.RequestedFeatures, []ChatFeature{"a", "b", "c"}) || cap(three.RequestedFeatures) != 3 {
		t.Errorf("requested_features = %q (cap %d)", three.RequestedFeatures, cap(three.RequestedFeatures))
	}
	if !bytes.Contains(marshal(t, three), []byte(`"files": null`)) {
		t.Errorf("files: %s", marshal(t, three))
	}
}

// TestConcurrentDecode: recycled decoders and their buffers are never
// shared between decodes running at the same time.
func TestConcurrentDecode(t *testing.T) {
	defer goleak.VerifyNone(t)
	files := []string{chunkFile, userFile}
	var data, want [][]byte
	for _, f := range files {
		data = append(data, readVector(t, f))
		want = append(want, marshal(t, unmarshal(t, data[len(data)-1])))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				k := (g + i) % len(files)
				ev, err := Unmarshal(data[k])
				if err == nil {
					var out []byte
					if out, err = Marshal(ev); err == nil && !bytes.Equal(out, want[k]) {
						err = fmt.Errorf("%s: got %s", files[k], out)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

package event

import (
	"testing"
)

func addVectorSeeds(f *testing.F) {
	for _, name := range vectorFiles(f) {
		f.Add(readVector(f, name))
	}
	f.Add([]byte(`{"_event_name":"LLMCostEvent","prompt_tokens_costs":NaN,"x":[Infinity,-Infinity,1e999]}`))
	f.Add([]byte(`{"_event_name":"X","_parent_event_names":["X","DisplayEvent","ControlEvent"],"y":{"_event_name":"ChunkEvent"}}`))
	f.Add([]byte(`{"_event_name":"AgentInTheLoopResponseEvent","stop_event":{"_event_name":"RAGFailureStopEvent","reason":"x"}}`))
	f.Add([]byte(`{"_event_name":"UserMessageEvent","messages":[{"role":"user","content":"\ud83d\ude00"}]}`))
}

// FuzzDecode: no input makes Unmarshal panic, and whatever decodes encodes,
// decodes again, and encodes to the same document.
func FuzzDecode(f *testing.F) {
	addVectorSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Unmarshal(data)
		if err != nil {
			return
		}
		out, err := Marshal(e)
		if err != nil {
			t.Fatalf("Marshal of a decoded event: %v", err)
		}
		e2, err := Unmarshal(out)
		if err != nil {
			t.Fatalf("Unmarshal of our own output: %v\n%s", err, out)
		}
		out2, err := Marshal(e2)
		if err != nil {
			t.Fatalf("second Marshal: %v", err)
		}
		if IsFallback(e) && !IsFallback(e2) {
			// A fallback whose computed name is registered (no name on the
			// wire) decodes exactly the second time, with computed parents.
			return
		}
		if d := semDiff(t, out, out2); d != "" {
			t.Fatalf("second round trip differs:\n%s\nfirst: %s", d, out)
		}
		if Name(e2) != Name(e) {
			t.Fatalf("name changed: %q → %q", Name(e), Name(e2))
		}
	})
}

// FuzzDecodeAs: the same for a caller-chosen last resort.
func FuzzDecodeAs(f *testing.F) {
	addVectorSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := UnmarshalAs[UserMessageEvent](data)
		if err != nil {
			return
		}
		if _, err := Marshal(e); err != nil {
			t.Fatalf("Marshal of a decoded event: %v", err)
		}
	})
}

// FuzzChatMessage: value decoding of chat messages (legacy content,
// unknown blocks, bytes) never panics and re-encodes stably.
func FuzzChatMessage(f *testing.F) {
	f.Add([]byte(`{"role": "user", "content": "Hello"}`))
	f.Add([]byte(`{"role":"user","blocks":[{"block_type":"image","image":"b'QUJD'"},{"block_type":"x","y":[1]}]}`))
	f.Add([]byte(`{"role":"user","blocks":[{"block_type":"audio","audio":[true,false],"format":"wav"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m ChatMessage
		if err := UnmarshalValue(data, &m); err != nil {
			return
		}
		out, err := MarshalValue(&m)
		if err != nil {
			t.Fatalf("MarshalValue: %v", err)
		}
		var m2 ChatMessage
		if err := UnmarshalValue(out, &m2); err != nil {
			t.Fatalf("UnmarshalValue of our own output: %v\n%s", err, out)
		}
		out2, _ := MarshalValue(&m2)
		if d := semDiff(t, out, out2); d != "" {
			t.Fatalf("second round trip differs:\n%s", d)
		}
	})
}

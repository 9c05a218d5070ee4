package event_test

import (
	"encoding/json"
	"testing"

	"github.com/saap-go/agent/event"
)

// encoding/json reads and writes a LocaleString in its wire form, as the
// event codec does: lowercase locales, null for a locale without text.
func TestLocaleStringJSON(t *testing.T) {
	data, err := json.Marshal(struct {
		T event.LocaleString `json:"t"`
	}{event.L("Hallo", "Hello", "", "")})
	if err != nil || string(data) != `{"t":{"de":"Hallo","en":"Hello","fr":null,"it":null}}` {
		t.Errorf("marshal: %s, %v", data, err)
	}
	var got struct {
		T []event.LocaleString `json:"t"`
	}
	if err := json.Unmarshal([]byte(`{"t":[{"de":"a","en":null,"xx":1},null]}`), &got); err != nil || len(got.T) != 2 || got.T[0].De != "a" || got.T[1] != (event.LocaleString{}) {
		t.Errorf("unmarshal: %+v, %v", got, err)
	}
	if err := json.Unmarshal([]byte(`{"t":[{"de":5}]}`), &got); err == nil {
		t.Error("a number was taken for a text")
	}
}

package guard

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []Kind
		redacted   string
	}{
		{"nothing", "The meeting is at 10:30 in room 4.", nil, ""},
		{"email", "Write to anna.muster@example.ch please.", []Kind{Email}, "Write to [e-mail address] please."},
		{"iban grouped", "Pay to CH93 0076 2011 6238 5295 7 today.", []Kind{IBAN}, "Pay to [IBAN] today."},
		{"iban compact lower", "iban: de89370400440532013000.", []Kind{IBAN}, "iban: [IBAN]."},
		{"iban bad checksum", "Pay to CH93 0076 2011 6238 5295 8 today.", nil, ""},
		{"iban with a group of letters", "GB29 NWBK 6016 1331 9268 19 is the account", []Kind{IBAN}, "[IBAN] is the account"},
		{"iban then a word", "CH93 0076 2011 6238 5295 7 AND MORE", []Kind{IBAN}, "[IBAN] AND MORE"},
		{"card", "Card 4111 1111 1111 1111, expires soon.", []Kind{Card}, "Card [card number], expires soon."},
		{"card dashes", "5555-5555-5555-4444", []Kind{Card}, "[card number]"},
		{"card bad luhn", "Order 4111 1111 1111 1112 shipped.", nil, ""},
		{"ahv", "AHV-Nr. 756.9217.0769.85", []Kind{AHV}, "AHV-Nr. [AHV number]"},
		{"ahv compact", "7561234567897", []Kind{AHV}, "[AHV number]"},
		{"ahv bad check digit", "756.1234.5678.90", nil, ""},
		{"phone international", "Call +41 79 123 45 67.", []Kind{Phone}, "Call [phone number]."},
		{"phone 00", "Call 0041 44 668 18 00 now", []Kind{Phone}, "Call [phone number] now"},
		{"phone national", "Tel. 044 668 18 00", []Kind{Phone}, "Tel. [phone number]"},
		{"short number", "Dial 117 or 144.", nil, ""},
		{"several", "Mail a@b.io, IBAN CH9300762011623852957, phone +41791234567.", []Kind{Email, IBAN, Phone},
			"Mail [e-mail address], IBAN [IBAN], phone [phone number]."},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms := Find(c.text)
			var got []Kind
			for _, m := range ms {
				got = append(got, m.Kind)
			}
			if len(got) != len(c.want) {
				t.Fatalf("Find(%q) = %v, want %v", c.text, ms, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("Find(%q) = %v, want %v", c.text, got, c.want)
				}
			}
			if c.redacted != "" {
				if r := Redact(c.text, ms); r != c.redacted {
					t.Errorf("Redact = %q, want %q", r, c.redacted)
				}
			}
		})
	}
}

func TestFindKinds(t *testing.T) {
	text := "a@b.io and +41 79 123 45 67"
	if ms := Find(text, Phone); len(ms) != 1 || ms[0].Kind != Phone {
		t.Errorf("Find(Phone) = %v", ms)
	}
}

func TestSensitiveInfoStages(t *testing.T) {
	g := &SensitiveInfo{}
	ctx := context.Background()
	in := &Check{Stage: Input, Messages: userText("my card is 4111111111111111")}
	v, err := g.Check(ctx, in)
	if err != nil || v.Accepted || v.Cleaned != "" {
		t.Errorf("input: %+v, %v; want a rejection that ends the run", v, err)
	}
	ans := assistantText("Sure: CH93 0076 2011 6238 5295 7")
	v, _ = g.Check(ctx, &Check{Stage: Output, Answer: &ans})
	if v.Accepted || v.Cleaned != "Sure: [IBAN]" {
		t.Errorf("output: %+v; want the cleaned answer", v)
	}
	v, _ = g.Check(ctx, &Check{Stage: Output, Answer: ptr(assistantText("All good."))})
	if !v.Accepted {
		t.Errorf("clean output rejected: %+v", v)
	}
}

func FuzzFind(f *testing.F) {
	for _, s := range []string{"CH93 0076 2011 6238 5295 7", "GB29 NWBK 6016 1331 9268 19", "a@b.io x@y.ch", "+41 79 123 45 67", "044\t668 18 00",
		"756.9217.0769.85", "4111 1111 1111 1111", "5555-5555-5555-4444 and 4111111111111111", "{}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms := Find(s)
		at := 0
		for _, m := range ms {
			if m.Start < at || m.End > len(s) || m.Start >= m.End {
				t.Fatalf("Find(%q): bad or overlapping match %+v", s, m)
			}
			at = m.End
		}
		_ = Redact(s, ms)
		// Scanning only the regions finds what scanning everything finds.
		if full := findEverywhere(s); !slices.Equal(ms, full) {
			t.Fatalf("Find(%q) = %v, a scan of the whole text %v", s, ms, full)
		}
	})
}

// BenchmarkFind scans an answer of about 1 KiB, of prose alone and with
// one of each kind: the work SensitiveInfo adds to a guarded answer.
func BenchmarkFind(b *testing.B) {
	prose := strings.Repeat("The deduction applies to the tax year 2025 and is claimed in the return. ", 12)
	for _, c := range []struct {
		name, text string
		n          int
	}{
		{"prose", prose, 0},
		{"all kinds", prose + "Mail anna@example.ch, call +41 79 123 45 67, pay to CH93 0076 2011 6238 5295 7 with 4111 1111 1111 1111, AHV 756.9217.0769.85.", 5},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			for b.Loop() {
				if len(Find(c.text)) != c.n {
					b.Fatal("wrong findings")
				}
			}
		})
	}
}

// findEverywhere is Find without its regions: every pattern on the whole
// text.
func findEverywhere(text string) []Match {
	work := []byte(text)
	var out []Match
	for _, k := range Kinds {
		for _, loc := range patterns[k].FindAllIndex(work, -1) {
			start, end, ok := validate(k, string(work[loc[0]:loc[1]]))
			if !ok {
				continue
			}
			m := Match{Kind: k, Start: loc[0] + start, End: loc[0] + end}
			out = append(out, m)
			for i := m.Start; i < m.End; i++ {
				work[i] = 0
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

package guard

import (
	"context"
	"regexp"
	"sort"
	"strings"

	"github.com/saap-go/agent/event"
)

// Kind is a kind of sensitive information.
type Kind string

// The kinds SensitiveInfo finds.
const (
	Email Kind = "e-mail address"
	Phone Kind = "phone number"
	IBAN  Kind = "IBAN"
	Card  Kind = "card number"
	AHV   Kind = "AHV number"
)

// Kinds are every kind, in the order they are looked for: the numbers
// with a check digit first, so a phone pattern never takes part of one.
var Kinds = []Kind{AHV, IBAN, Card, Email, Phone}

var patterns = map[Kind]*regexp.Regexp{
	// Swiss social security number: 756, then 9 digits and an EAN-13 check digit.
	AHV:   regexp.MustCompile(`\b756[.\- ]?\d{4}[.\- ]?\d{4}[.\- ]?\d{2}\b`),
	IBAN:  regexp.MustCompile(`(?i)\b[a-z]{2}\d{2}(?: ?[a-z0-9]){11,30}\b`),
	Card:  regexp.MustCompile(`\b\d(?:[ \-]?\d){12,18}\b`),
	Email: regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`),
	Phone: regexp.MustCompile(`(?:\+|\b00)[1-9]\d{0,2}(?:[ .\-/]?\(0\))?(?:[ .\-/]?\d){6,13}\b|\b0\d{2}(?:[ .\-/]?\d){7}\b`),
}

// Match is one piece of sensitive information in a text.
type Match struct {
	Kind Kind
	// Start and End are byte offsets of the match.
	Start, End int
}

// Find returns the sensitive information in text, of the given kinds
// (every kind when none), ordered by position. Numbers with a check digit
// (IBAN: ISO 7064 mod 97; card numbers: Luhn; AHV numbers: EAN-13) match
// only when the check digit is right.
func Find(text string, kinds ...Kind) []Match {
	if len(kinds) == 0 {
		kinds = Kinds
	}
	want := map[Kind]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	// Each kind scans the text with earlier matches blanked out, and only
	// where it could match: the regular expressions are slow on prose.
	work := []byte(text)
	numbers, mails := numberRegions(work), mailRegions(work)
	var out []Match
	for _, k := range Kinds {
		if !want[k] {
			continue
		}
		regions := numbers
		if k == Email {
			regions = mails
		}
		for _, r := range regions {
			for _, loc := range patterns[k].FindAllIndex(work[r[0]:r[1]], -1) {
				start, end, ok := validate(k, string(work[r[0]+loc[0]:r[0]+loc[1]]))
				if !ok {
					continue
				}
				m := Match{Kind: k, Start: r[0] + loc[0] + start, End: r[0] + loc[0] + end}
				out = append(out, m)
				for i := m.Start; i < m.End; i++ {
					work[i] = '\x00'
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// minDigits is the fewest digits any number kind has (a phone number).
const minDigits = 9

// numberRegions returns the runs of space-separated words of text that
// each hold a digit (or could be an IBAN's group of letters) and hold at
// least minDigits together: where a number kind can match. A run starts and ends at a word's edge, so the patterns'
// word boundaries hold within it.
func numberRegions(text []byte) [][2]int {
	var out [][2]int
	start, digitsIn := -1, 0
	flush := func(end int) {
		if start >= 0 && digitsIn >= minDigits {
			out = append(out, [2]int{start, end})
		}
		start, digitsIn = -1, 0
	}
	for i := 0; i < len(text); {
		for i < len(text) && isSpace(text[i]) {
			i++
		}
		w := i
		n := 0
		for i < len(text) && !isSpace(text[i]) {
			if isDigit(text[i]) {
				n++
			}
			i++
		}
		if w == i {
			break
		}
		if n == 0 && (start < 0 || !ibanGroup(text[w:i])) {
			flush(w)
			continue
		}
		if start < 0 {
			start = w
		}
		digitsIn += n
		if i < len(text) && text[i] != ' ' {
			flush(i) // numbers are grouped by single spaces only
		}
	}
	flush(len(text))
	return out
}

// ibanGroup reports whether a word without digits may still be part of a
// number: a group of an IBAN ("GB29 NWBK 6016 …").
func ibanGroup(w []byte) bool {
	if len(w) > 4 {
		return false
	}
	for _, c := range w {
		if !isDigit(c) && !isLetter(upper(c)) {
			return false
		}
	}
	return true
}

// mailRegions returns the words of text that hold an '@'.
func mailRegions(text []byte) [][2]int {
	var out [][2]int
	for i := 0; i < len(text); i++ {
		if text[i] != '@' {
			continue
		}
		a, b := i, i
		for a > 0 && !isSpace(text[a-1]) {
			a--
		}
		for b < len(text) && !isSpace(text[b]) {
			b++
		}
		if len(out) > 0 && out[len(out)-1][1] >= a {
			continue
		}
		out = append(out, [2]int{a, b})
		i = b
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// validate checks a candidate and returns the part of it that is valid.
func validate(k Kind, s string) (start, end int, ok bool) {
	switch k {
	case AHV:
		d := digits(s)
		return 0, len(s), len(d) == 13 && ean13(d)
	case IBAN:
		return ibanPrefix(s)
	case Card:
		d := digits(s)
		return 0, len(s), len(d) >= 13 && len(d) <= 19 && luhn(d)
	case Phone:
		n := len(digits(s))
		return 0, len(s), n >= 9 && n <= 15
	}
	return 0, len(s), true
}

func digits(s string) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' {
			out = append(out, c-'0')
		}
	}
	return out
}

// ean13 checks the EAN-13 check digit, which AHV numbers use.
func ean13(d []byte) bool {
	sum := 0
	for i := 0; i < 12; i++ {
		w := 1
		if i%2 == 1 {
			w = 3
		}
		sum += int(d[i]) * w
	}
	return (10-sum%10)%10 == int(d[12])
}

// luhn checks the Luhn check digit of a card number.
func luhn(d []byte) bool {
	sum := 0
	for i := range d {
		v := int(d[len(d)-1-i])
		if i%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

// ibanPrefix returns the longest prefix of s (spaces allowed between
// characters) that is an IBAN with a valid ISO 7064 mod 97 checksum, so
// that words the pattern ran into are left out.
func ibanPrefix(s string) (start, end int, ok bool) {
	var chars []byte
	var ends []int // ends[i] is the byte offset after chars[i]
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' {
			chars = append(chars, upper(s[i]))
			ends = append(ends, i+1)
		}
	}
	for n := min(len(chars), 34); n >= 15; n-- {
		// A shorter IBAN ends where the text had a space, never inside a word.
		if (n == len(chars) || s[ends[n-1]] == ' ') && mod97(chars[:n]) == 1 {
			return 0, ends[n-1], true
		}
	}
	return 0, 0, false
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// mod97 computes the IBAN checksum: the first four characters moved to the
// end, letters as 10..35, the number modulo 97.
func mod97(iban []byte) int {
	if len(iban) < 5 || !isLetter(iban[0]) || !isLetter(iban[1]) || !isDigit(iban[2]) || !isDigit(iban[3]) {
		return -1
	}
	r := 0
	add := func(c byte) {
		switch {
		case isDigit(c):
			r = (r*10 + int(c-'0')) % 97
		case isLetter(c):
			r = (r*100 + int(c-'A'+10)) % 97
		}
	}
	for _, c := range iban[4:] {
		add(c)
	}
	for _, c := range iban[:4] {
		add(c)
	}
	return r
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' }

// Redact returns text with each match replaced by its kind in brackets.
func Redact(text string, ms []Match) string {
	var b strings.Builder
	at := 0
	for _, m := range ms {
		if m.Start < at {
			continue
		}
		b.WriteString(text[at:m.Start])
		b.WriteString("[" + string(m.Kind) + "]")
		at = m.End
	}
	b.WriteString(text[at:])
	return b.String()
}

// SensitiveInfo rejects a text holding sensitive information: e-mail
// addresses, phone numbers, IBANs, card numbers and Swiss AHV numbers
// (Find). On an answer (Output) the rejection carries the answer with each
// finding replaced by its kind in brackets, which becomes the run's
// answer, as the reference's sensitive information guard cleans an answer;
// on an input it ends the run, on a tool call it keeps the tool from
// running. Its decisions are SensitiveInfoAcceptEvents and
// SensitiveInfoRejectEvents (with the cleaned answer).
type SensitiveInfo struct {
	// Kinds are the kinds to look for; every kind when empty.
	Kinds []Kind
}

// Name implements Guard.
func (g *SensitiveInfo) Name() string { return "sensitive_info" }

// Check implements Guard.
func (g *SensitiveInfo) Check(_ context.Context, c *Check) (Verdict, error) {
	text := c.Text()
	ms := Find(text, g.Kinds...)
	if len(ms) == 0 {
		return Accept("no sensitive information found"), nil
	}
	var kinds []string
	seen := map[Kind]bool{}
	for _, m := range ms {
		if !seen[m.Kind] {
			seen[m.Kind] = true
			kinds = append(kinds, string(m.Kind))
		}
	}
	v := Reject("sensitive information found: " + strings.Join(kinds, ", "))
	if c.Stage == Output {
		v.Cleaned = Redact(text, ms)
	}
	return v, nil
}

// Record implements Recorder.
func (g *SensitiveInfo) Record(v Verdict) event.Event {
	if v.Accepted {
		return &event.SensitiveInfoAcceptEvent{GuardAcceptEvent: event.GuardAcceptEvent{Reason: v.Reason}}
	}
	return &event.SensitiveInfoRejectEvent{GuardRejectionEvent: event.GuardRejectionEvent{Reason: v.Reason}, CleanedAnswer: v.Cleaned}
}

// Emits implements Recorder.
func (g *SensitiveInfo) Emits() []event.Event {
	return []event.Event{(*event.SensitiveInfoAcceptEvent)(nil), (*event.SensitiveInfoRejectEvent)(nil)}
}

package topic

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// seedSubjects reads testdata/seed-subjects.txt: subjects and subject
// templates (with <placeholders>) collected from the protocol's
// documentation, one a line, as fuzz seeds.
func seedSubjects(tb testing.TB) []string {
	b, err := os.ReadFile(filepath.Join("testdata", "seed-subjects.txt"))
	if err != nil {
		tb.Fatalf("seed subjects: %v", err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// FuzzParse: Parse never panics; an error is a *SubjectError whose
// positions point at the offending character; a success renders back to
// the same subject, through the strict builder when no token is "*".
func FuzzParse(f *testing.F) {
	seeds := seedSubjects(f)
	if len(seeds) < 20 {
		f.Fatalf("found only %d seed subjects in testdata", len(seeds))
	}
	seeds = append(seeds,
		"agent.RAGAgent.wiki.66b9f0a1c2d3e4f5a6b7c8d0.66b9f0a1c2d3e4f5a6b7c8d1.66b9f0a1c2d3e4f5a6b7c8d2.display_event.ChunkEvent.66b9f0a1c2d3e4f5a6b7c8d3",
		"agent.UserAgent.9f1c2b7e-1d2c-4b1a-9e1f-0c1d2e3f4a5b.t.d.r.display_event.UserMessageEvent.e",
		"process.P.*.w.work.HumanWorkEvent.e", "class_discovery.agent.RAGAgent.*.response.c1",
		"", ".", "agent", "agent.........", "agent.*.*.*.*.*.*.*.>", "agent.é.ß.日.本.🙂.control_event.N.e",
		"agent.X.i.t.d.r.control_event.N.e\xff", "aihub.rpc.a.b.c.d\x00")
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s)
		if err != nil {
			checkParseError(t, s, v, err)
			return
		}
		var rendered, strict string
		var strictErr error
		wild := false
		switch x := v.(type) {
		case Agent:
			rendered = x.String()
			strict, strictErr = x.Subject()
			p, perr := AgentPattern(x).Subject()
			if perr != nil || p != s {
				t.Fatalf("AgentPattern(%#v).Subject() = %q, %v; want %q", x, p, perr, s)
			}
			wild = strings.Contains(rendered, "*")
		case Process:
			rendered = x.String()
			strict, strictErr = x.Subject()
			wild = strings.Contains(x.Class+x.Walkthrough+string(x.Type)+x.Name+x.EventID, "*")
		case RPC:
			rendered = x.String()
			strict, strictErr = x.Subject()
			wild = strings.Contains(rendered, "*")
		case Discovery:
			rendered = x.String()
			strict, strictErr = x.Subject()
			wild = x.CallID == Wildcard
		default:
			t.Fatalf("Parse(%q) returned %T", s, v)
		}
		if rendered != s {
			t.Fatalf("Parse(%q) renders back as %q", s, rendered)
		}
		if !wild && (strictErr != nil || strict != s) {
			t.Fatalf("Parse(%q) = %#v, but Subject() = %q, %v", s, v, strict, strictErr)
		}
		if wild && strictErr == nil {
			t.Fatalf("Subject() of %#v accepted a wildcard: %q", v, strict)
		}
	})
}

func checkParseError(t *testing.T, s string, v any, err error) {
	t.Helper()
	if v != nil {
		t.Fatalf("Parse(%q) returned %#v with error %v", s, v, err)
	}
	var se *SubjectError
	if !errors.As(err, &se) || se.Subject != s || err.Error() == "" {
		t.Fatalf("Parse(%q): error %T %v is not a *SubjectError for the subject", s, err, err)
	}
	var te *TokenError
	if !errors.As(err, &te) {
		if !errors.Is(err, ErrGrammar) {
			t.Fatalf("Parse(%q): %v is neither a token error nor ErrGrammar", s, err)
		}
		return
	}
	if te.Token == "" || !strings.Contains(err.Error(), te.Token) {
		t.Fatalf("Parse(%q): %v does not name the token", s, err)
	}
	if te.Pos < 0 {
		if se.Pos != -1 {
			t.Fatalf("Parse(%q): token error without position but subject position %d", s, se.Pos)
		}
		return
	}
	r, _ := utf8.DecodeRuneInString(te.Value[te.Pos:])
	r2, _ := utf8.DecodeRuneInString(s[se.Pos:])
	if r != te.Char || r2 != te.Char {
		t.Fatalf("Parse(%q): %v: char %q, value has %q at %d, subject has %q at %d", s, err, te.Char, r, te.Pos, r2, se.Pos)
	}
}

// FuzzAgentSubject: building from arbitrary fields either fails naming a
// token or yields a subject that parses back to the same fields.
func FuzzAgentSubject(f *testing.F) {
	f.Add("RAGAgent", "wiki", "t", "d", "r", "control_event", "StartEvent", "e")
	f.Add("UserAgent", "first.last", "t", "d", "r", "display_event", "UserMessageEvent", "e")
	f.Add("X", "*", "t", "d", "r", "control_event", "N", "e")
	f.Add("X", "i", "t\u2028", "d", "r", "work", "N", "")
	f.Fuzz(func(t *testing.T, class, id, thread, display, run, typ, name, eventID string) {
		a := Agent{class, id, thread, display, run, EventType(typ), name, eventID}
		s, err := a.Subject()
		if err != nil {
			var te *TokenError
			if !errors.As(err, &te) || te.Token == "" {
				t.Fatalf("Subject(%#v): %v is not a *TokenError", a, err)
			}
			return
		}
		back, err := ParseAgent(s)
		if err != nil || back != a {
			t.Fatalf("ParseAgent(%q) = %#v, %v; want %#v", s, back, err, a)
		}
	})
}

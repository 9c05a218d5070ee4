package topic

import (
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"unicode/utf8"
)

// grammar lets one set of property tests drive all four grammars through
// their field values, in token order.
type grammar struct {
	name   string
	tokens []string         // grammar names of the fields
	closed map[int][]string // fields with a closed set of values
	star   map[int]bool     // fields whose builder accepts a literal "*"
	build  func([]string) (string, error)
	render func([]string) string // String(): never fails
	parse  func(string) ([]string, error)
}

var grammars = []grammar{
	{
		name:   "agent",
		tokens: agentTokens[:],
		closed: map[int][]string{5: {string(Control), string(Display)}},
		build:  func(v []string) (string, error) { return agentOf(v).Subject() },
		render: func(v []string) string { return agentOf(v).String() },
		parse: func(s string) ([]string, error) {
			a, err := ParseAgent(s)
			t := a.tokens()
			return t[:], err
		},
	},
	{
		name:   "process",
		tokens: processTokens[:],
		closed: map[int][]string{3: {string(Work), string(WorkRequest)}},
		star:   map[int]bool{1: true},
		build:  func(v []string) (string, error) { return processOf(v).Subject() },
		render: func(v []string) string { return processOf(v).String() },
		parse: func(s string) ([]string, error) {
			p, err := ParseProcess(s)
			t := p.tokens()
			return t[:], err
		},
	},
	{
		name:   "rpc",
		tokens: rpcTokens[:],
		build:  func(v []string) (string, error) { return rpcOf(v).Subject() },
		render: func(v []string) string { return rpcOf(v).String() },
		parse: func(s string) ([]string, error) {
			r, err := ParseRPC(s)
			t := r.tokens()
			return t[:], err
		},
	},
	{
		name:   "discovery",
		tokens: []string{"kind", "class", "direction", "call_id"},
		closed: map[int][]string{0: {KindAgent, KindProcess}, 2: {DirRequest, DirResponse, DirAnnounce}},
		star:   map[int]bool{1: true},
		build:  func(v []string) (string, error) { return discoveryOf(v).Subject() },
		render: func(v []string) string { return discoveryOf(v).String() },
		parse: func(s string) ([]string, error) {
			d, err := ParseDiscovery(s)
			return []string{d.Kind, d.Class, d.Dir, d.CallID}, err
		},
	},
}

func agentOf(v []string) Agent {
	return Agent{v[0], v[1], v[2], v[3], v[4], EventType(v[5]), v[6], v[7]}
}

func processOf(v []string) Process {
	return Process{v[0], v[1], v[2], ProcessEventType(v[3]), v[4], v[5]}
}

func rpcOf(v []string) RPC { return RPC{v[0], v[1], v[2], v[3]} }

func discoveryOf(v []string) Discovery { return Discovery{v[0], v[1], v[2], v[3]} }

// validRunes are odd-but-valid token characters: unicode letters, marks,
// symbols, format characters and the punctuation ids use.
var validRunes = []rune("abcxyzABCXYZ0189-_:#@/+~$%&=!?'\"()[]{}|,;éßΩжλ日本語한🙂ǅ\u00ad\u0301\u200b\ufffd")

// invalidRunes are the characters a token may not hold; utf8.RuneError stands for a
// lone invalid byte (0xff).
var invalidRunes = []rune{'.', '*', '>', ' ', '\t', '\n', '\r', '\v', '\f', 0, 0x1b, 0x7f,
	0x80, 0x85, 0x9f, 0xa0, 0x1680, 0x2003, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, utf8.RuneError}

func genToken(r *rand.Rand) string {
	n := 1 + r.Intn(12)
	var b strings.Builder
	for range n {
		b.WriteRune(validRunes[r.Intn(len(validRunes))])
	}
	return b.String()
}

// genValues draws valid field values for g.
func genValues(g grammar, r *rand.Rand) []string {
	v := make([]string, len(g.tokens))
	for i := range v {
		switch {
		case g.closed[i] != nil:
			set := g.closed[i]
			v[i] = set[r.Intn(len(set))]
		case g.star[i] && r.Intn(4) == 0:
			v[i] = Wildcard
		default:
			v[i] = genToken(r)
		}
	}
	return v
}

// corruption inserts an invalid character into a valid token.
type corruption struct {
	field int
	char  rune // utf8.RuneError: the byte 0xff
	pos   int
}

func (c corruption) apply(v []string) []string {
	out := append([]string(nil), v...)
	tok := out[c.field]
	bad := string(c.char)
	if c.char == utf8.RuneError {
		bad = "\xff"
	}
	out[c.field] = tok[:c.pos] + bad + tok[c.pos:]
	return out
}

// genCorruption picks a free (not closed) field of v and a rune boundary in
// it; v[field] must not be "*".
func genCorruption(g grammar, v []string, r *rand.Rand) corruption {
	var free []int
	for i := range g.tokens {
		if g.closed[i] == nil && v[i] != Wildcard {
			free = append(free, i)
		}
	}
	f := free[r.Intn(len(free))]
	var bounds []int
	for i := range v[f] {
		bounds = append(bounds, i)
	}
	bounds = append(bounds, len(v[f]))
	return corruption{field: f, char: invalidRunes[r.Intn(len(invalidRunes))], pos: bounds[r.Intn(len(bounds))]}
}

// tokenErr extracts the *TokenError of err, or nil.
func tokenErr(err error) *TokenError {
	var te *TokenError
	if errors.As(err, &te) {
		return te
	}
	return nil
}

func equalValues(a, b []string) bool { return reflect.DeepEqual(a, b) }

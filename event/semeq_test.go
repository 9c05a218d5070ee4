package event

import (
	"errors"
	"math/big"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// pyInt is an integer too large for int64, compared by its digits.
type pyInt string

// pyParse reads JSON the way Python's json.loads does: a
// number token with '.', 'e' or 'E' (or NaN/Infinity) is a float64, any
// other number an int64, so int and float are different types.
func pyParse(t *testing.T, data []byte) any {
	t.Helper()
	d := decoder{data: data}
	v, err := d.pyValue()
	if err == nil {
		err = d.end()
	}
	if err != nil {
		t.Fatalf("pyParse: %v\n%s", err, data)
	}
	return v
}

func (d *decoder) pyValue() (any, error) {
	switch d.peek() {
	case '{':
		m := map[string]any{}
		err := d.object(func(key []byte) error {
			v, err := d.pyValue()
			m[string(key)] = v
			return err
		})
		return m, err
	case '[':
		s := []any{}
		err := d.array(func() error {
			v, err := d.pyValue()
			s = append(s, v)
			return err
		})
		return s, err
	case '"':
		return d.str()
	case 't', 'f', 'n':
		raw, err := d.skip()
		switch string(raw) {
		case "true":
			return true, err
		case "false":
			return false, err
		}
		return nil, err
	}
	raw, isFloat, err := d.number()
	if err != nil {
		return nil, err
	}
	if isFloat {
		f, err := parseFloat(raw)
		if errors.Is(err, strconv.ErrRange) {
			err = nil // Python reads 1e999 as inf
		}
		return f, err
	}
	if n, ok := parseInt(raw); ok {
		return n, nil
	}
	var b big.Int
	b.SetString(string(raw), 10)
	return pyInt(b.String()), nil
}

// normParents rewrites every _parent_event_names list to its first element
// followed by the others sorted, so lists compare as "same first element,
// same set".
func normParents(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == keyParents {
				if l, ok := e.([]any); ok && len(l) > 1 {
					rest := slices.Clone(l[1:])
					slices.SortFunc(rest, func(a, b any) int {
						as, _ := a.(string)
						bs, _ := b.(string)
						if as < bs {
							return -1
						} else if as > bs {
							return 1
						}
						return 0
					})
					x[k] = append([]any{l[0]}, rest...)
					continue
				}
			}
			x[k] = normParents(e)
		}
	case []any:
		for i := range x {
			x[i] = normParents(x[i])
		}
	}
	return v
}

// semDiff returns the semantic difference of two JSON documents, "" when equal.
func semDiff(t *testing.T, want, got []byte) string {
	t.Helper()
	return cmp.Diff(normParents(pyParse(t, want)), normParents(pyParse(t, got)), cmpopts.EquateNaNs())
}

func TestSemDiffDistinguishesIntAndFloat(t *testing.T) {
	if semDiff(t, []byte(`{"a": 0.0}`), []byte(`{"a": 0}`)) == "" {
		t.Fatal("0.0 and 0 compared equal")
	}
	if semDiff(t, []byte(`{"a": 1755015355940833270}`), []byte(`{"a":1755015355940833271}`)) == "" {
		t.Fatal("created_at values differing by one compared equal")
	}
	if d := semDiff(t, []byte(`{"_parent_event_names": ["A", "C", "B"], "x": NaN}`), []byte(`{"x":NaN,"_parent_event_names":["A","B","C"]}`)); d != "" {
		t.Fatalf("equal documents differ: %s", d)
	}
	if semDiff(t, []byte(`{"_parent_event_names": ["A", "B"]}`), []byte(`{"_parent_event_names": ["B", "A"]}`)) == "" {
		t.Fatal("parent lists with different first elements compared equal")
	}
}

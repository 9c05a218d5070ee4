package llmtest

import (
	"context"
	"math"
	"slices"
	"testing"
)

func cos(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestHashEmbedder(t *testing.T) {
	e := HashEmbedder{Dim: 128}
	vs, err := e.Embed(context.Background(), []string{"The cat sat on the mat", "the CAT sat", "quarterly revenue report", ""})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if len(v) != 128 || math.Abs(cos(v, v)-1) > 1e-5 {
			t.Fatalf("vector %d: len %d, norm² %v", i, len(v), cos(v, v))
		}
	}
	if near, far := cos(vs[0], vs[1]), cos(vs[0], vs[2]); near <= far || near < 0.5 {
		t.Fatalf("shared words %.3f, none %.3f", near, far)
	}
	again, _ := e.Embed(context.Background(), []string{"The cat sat on the mat"})
	if !slices.Equal(again[0], vs[0]) {
		t.Fatal("not deterministic")
	}
}

package natskv_test

import (
	"errors"
	"testing"

	"github.com/saap-go/agent/store"
	"github.com/saap-go/agent/store/natskv"
)

// TestDeletedBucketRecreated: an operation that fails because the state
// bucket was deleted makes the store recreate it and report it on Lost;
// the next operation works on the new, empty bucket.
func TestDeletedBucketRecreated(t *testing.T) {
	js := connect(t, embedded(t))
	ctx := t.Context()
	s, err := natskv.New(ctx, js, natskv.Config{})
	if err != nil {
		t.Fatal(err)
	}
	run := store.RunKey{Class: "C", Run: "r1"}
	if _, _, err := s.SetMarker(ctx, run, "m", "v"); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, natskv.DefaultBucket); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Marker(ctx, run, "m"); err == nil {
		t.Fatal("Marker on a deleted bucket: no error")
	}
	var lb *natskv.LostBucketError
	select {
	case err := <-s.Lost():
		if !errors.As(err, &lb) || lb.Bucket != natskv.DefaultBucket || !lb.State {
			t.Fatalf("Lost reported %v", err)
		}
	default:
		t.Fatal("no report on Lost")
	}
	if _, err := js.KeyValue(ctx, natskv.DefaultBucket); err != nil {
		t.Fatalf("bucket not recreated: %v", err)
	}
	if _, created, err := s.SetMarker(ctx, run, "m", "w"); err != nil || !created {
		t.Errorf("SetMarker on the recreated bucket: created %v, %v", created, err)
	}
}

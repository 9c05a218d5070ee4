package redis

import (
	"strings"
	"testing"

	"github.com/saap-go/agent/store"

	"github.com/redis/go-redis/v9"
)

func TestKeysKeepNamespacesApart(t *testing.T) {
	s, err := New(nilClient{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Without escaping, class "a:b" run "c" and class "a" run "b:c" would
	// share their keys.
	k1 := s.runKey(store.RunKey{Class: "a:b", Run: "c"}, "ctx")
	k2 := s.runKey(store.RunKey{Class: "a", Run: "b:c"}, "ctx")
	if k1 == k2 {
		t.Fatalf("two runs share key %s", k1)
	}
	// Braces in ids must not end the hash tag early.
	k := s.runKey(store.RunKey{Class: "x}y", Run: "{r}"}, "claims")
	tag := k[strings.Index(k, "{")+1 : strings.Index(k, "}")]
	if tag != "run:x%7Dy:%7Br%7D" {
		t.Fatalf("hash tag of %s = %q", k, tag)
	}
	if got := escape("50%:ü"); got != "50%25%3Aü" {
		t.Fatalf("escape = %q", got)
	}
	if claimField("a:b", "c") == claimField("a", "b:c") {
		t.Fatal("claim fields of two steps collide")
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.Prefix != DefaultPrefix || c.TTL != DefaultTTL || c.ThreadTTL != 0 {
		t.Fatalf("defaults = %+v", c)
	}
	if c := (Config{TTL: -1, ThreadTTL: -1}).withDefaults(); c.TTL != 0 || c.ThreadTTL != 0 {
		t.Fatalf("negative TTLs = %+v, want no expiry", c)
	}
}

// nilClient satisfies redis.UniversalClient for tests of key naming only;
// calling any of its methods panics.
type nilClient struct{ redis.UniversalClient }

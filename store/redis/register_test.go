package redis_test

import (
	"io"
	"os"
	"slices"
	"testing"

	"github.com/saap-go/agent/store"
	redisstore "github.com/saap-go/agent/store/redis"
)

func TestImportRegistersTheSchemes(t *testing.T) {
	if s := store.Schemes(); !slices.Contains(s, "redis") || !slices.Contains(s, "rediss") {
		t.Fatalf("registered schemes %v, want redis and rediss", s)
	}
	url := os.Getenv("REDIS_URL")
	if url == "" {
		t.Skip("REDIS_URL not set: skipping opening the Redis store by URL")
	}
	st, err := store.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := st.(io.Closer); ok {
		defer c.Close()
	}
	if _, ok := st.(*redisstore.Store); !ok {
		t.Fatalf("store.Open(%q) gave a %T, want a *redis.Store", url, st)
	}
}

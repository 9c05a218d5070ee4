//go:build tools

// Package tools pins the versions of the development tools that .ci/run
// installs, kept out of the library's own dependency list.
package tools

import (
	_ "golang.org/x/perf/cmd/benchstat"
	_ "honnef.co/go/tools/cmd/staticcheck"
)

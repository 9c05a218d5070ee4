package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

func cmdVersion(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "version", "version", "  saap version\n  saap --version\n")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	fmt.Fprintln(e.stdout, versionLine())
	return nil
}

// versionLine names the module version the binary was built from (go
// install stamps it; a build in a checkout gives a pseudo-version or
// "(devel)"), the VCS revision when known, and the Go toolchain.
func versionLine() string {
	v, rev := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			// A pseudo-version already names its revision.
			if s.Key == "vcs.revision" && v == "(devel)" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("saap %s%s %s %s/%s", v, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

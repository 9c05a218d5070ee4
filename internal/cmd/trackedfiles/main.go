// Command trackedfiles fails when the git repository in the current
// directory tracks an executable binary or a file larger than 1 MB outside
// the allow-list, so that a go get of the module never downloads build
// outputs.
//
// Usage: trackedfiles [allow-glob ...]
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
)

// maxSize is the largest file tracked without being allowed by name.
const maxSize = 1 << 20

// executable magic numbers: ELF, Mach-O (both byte orders, 32 and 64 bit,
// universal), PE and WebAssembly.
var magics = [][]byte{
	{0x7f, 'E', 'L', 'F'},
	{0xfe, 0xed, 0xfa, 0xce}, {0xce, 0xfa, 0xed, 0xfe},
	{0xfe, 0xed, 0xfa, 0xcf}, {0xcf, 0xfa, 0xed, 0xfe},
	{0xca, 0xfe, 0xba, 0xbe},
	{'M', 'Z'},
	{0x00, 'a', 's', 'm'},
}

func main() {
	bad, err := check(".", os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "trackedfiles:", err)
		os.Exit(2)
	}
	for _, b := range bad {
		fmt.Println(b)
	}
	if len(bad) > 0 {
		fmt.Println("remove these from git (git rm --cached) and ignore them, or allow them by name in .ci/run")
		os.Exit(1)
	}
}

// check returns one line per tracked file under dir that is an executable
// binary or larger than maxSize, unless a glob of allow matches its path.
func check(dir string, allow []string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var bad []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" || allowed(name, allow) {
			continue
		}
		p := dir + "/" + name
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink
		}
		if fi.Size() > maxSize {
			bad = append(bad, fmt.Sprintf("%s: %d bytes, more than %d", name, fi.Size(), maxSize))
			continue
		}
		if isBinary(p) {
			bad = append(bad, name+": an executable binary")
		}
	}
	return bad, nil
}

func allowed(name string, allow []string) bool {
	for _, g := range allow {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

func isBinary(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	for _, m := range magics {
		if len(m) == 2 && bytes.HasPrefix(head, m) {
			// "MZ" alone is also the start of text; a PE file is
			// binary past its header.
			return peLike(p)
		}
		if bytes.Equal(head, m) {
			return true
		}
	}
	return false
}

// peLike tells a PE executable from a text file that starts with "MZ": the
// former holds NUL bytes in its first block.
func peLike(p string) bool {
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	if len(b) > 512 {
		b = b[:512]
	}
	return bytes.IndexByte(b, 0) >= 0
}

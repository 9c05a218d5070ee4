// Command waiter is exectest's test subject: it prints its arguments and
// "ready", then exits 0 on SIGTERM, or exits 3 at once with -fail.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-fail" {
		fmt.Fprintln(os.Stderr, "failing as asked; EXECTEST_VAR="+os.Getenv("EXECTEST_VAR"))
		os.Exit(3)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	fmt.Println("args:", strings.Join(os.Args[1:], " "))
	fmt.Println("ready")
	<-sig
	fmt.Println("bye")
}

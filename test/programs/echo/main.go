// SPDX-License-Identifier: Apache-2.0

// Command echo is the real-node tests' long-running container: it copies
// its stdin to stdout (kubectl attach), echoes every TCP connection on
// $ECHO_PORT back to its sender (kubectl port-forward), and with --say
// prints its words and exits (kubectl exec). It runs until SIGTERM.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	say := flag.String("say", "", "print this and exit")
	flag.Parse()
	if *say != "" {
		fmt.Println(*say, strings.Join(flag.Args(), " "))
		return
	}
	if port := os.Getenv("ECHO_PORT"); port != "" {
		l, err := net.Listen("tcp", ":"+port)
		if err != nil {
			fmt.Fprintln(os.Stderr, "echo:", err)
			os.Exit(1)
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					_, _ = io.Copy(c, c)
				}()
			}
		}()
	}
	// PID 1 of its container: a signal without a handler would be ignored.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	fmt.Println("echo: ready")
	go func() { _, _ = io.Copy(os.Stdout, os.Stdin) }()
	<-stop
}

// Command pause is the pod sandbox process of the real test node: it holds the pod's namespaces,
// reaps zombies when it is PID 1 of a shared process namespace, and exits 0 on SIGTERM or SIGINT.
// It does what the upstream pause image does, built from this repository with CGO_ENABLED=0 so no
// image has to be pulled from a registry.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is what `pause -v` prints, matching the tag the image is imported under.
const version = "3.10"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause.go", version)
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		switch sig {
		case syscall.SIGCHLD:
			for {
				var status syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		default:
			fmt.Fprintf(os.Stderr, "Shutting down, got signal: %v\n", sig)
			os.Exit(0)
		}
	}
}

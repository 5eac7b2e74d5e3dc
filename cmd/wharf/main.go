// Command wharf is the command-line client of wharfd: local images, pull,
// push, login and remote inspection, with docker's flags and output.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], newStreams(os.Stdin, os.Stdout, os.Stderr), osEnv{}))
}

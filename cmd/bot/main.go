// Command bot runs threadsmith.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "threadsmith: not wired yet")
	os.Exit(1)
}

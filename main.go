// Command folio runs open-weight LLMs on a workstation. See docs/DESIGN.md.
package main

import (
	"os"

	"folio/cmd"
)

func main() {
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}

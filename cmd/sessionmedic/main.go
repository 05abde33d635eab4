// Command sessionmedic watches AI-agent session files and heals the damaged ones.
package main

import (
	"context"
	"os"
)

func main() {
	tuneGC(os.Args[1:], os.Getenv)
	ctx, stop := signalContext(context.Background(), os.Stderr, graceFor(os.Args[1:]))
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

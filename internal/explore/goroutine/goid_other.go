//go:build !amd64 && !arm64

package goroutine

import "unsafe"

// getg is nil where the explorer cannot read the g register: goroutine
// ids are then read from stack traces (ID).
func getg() unsafe.Pointer { return nil }

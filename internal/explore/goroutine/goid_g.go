//go:build amd64 || arm64

package goroutine

import "unsafe"

// getg is the calling goroutine's record in the runtime (goid_*.s).
func getg() unsafe.Pointer

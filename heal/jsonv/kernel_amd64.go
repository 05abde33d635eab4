//go:build amd64 && !purego

package jsonv

import "golang.org/x/sys/cpu"

// bestKernel is the fastest kernel this CPU runs, fixed at start.
var bestKernel = func() kernel {
	if cpu.X86.HasAVX2 {
		return kernelAVX2
	}
	return kernelSWAR
}()

// kernels lists the kernels this CPU runs, for tests.
func kernels() []kernel {
	if bestKernel == kernelAVX2 {
		return []kernel{kernelSWAR, kernelAVX2}
	}
	return []kernel{kernelSWAR}
}

// scanStringAVX2 is in string_amd64.s.
//
//go:noescape
func scanStringAVX2(b []byte, i int, surr bool) int

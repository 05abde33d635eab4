//go:build !amd64 || purego

package jsonv

// bestKernel is the only kernel of this build.
const bestKernel = kernelSWAR

// kernels lists the kernels this build runs, for tests.
func kernels() []kernel { return []kernel{kernelSWAR} }

// scanStringAVX2 is never called in this build; -1 sends the caller to the portable code.
func scanStringAVX2(b []byte, i int, surr bool) int { return -1 }

package jsonv

// kernel names an implementation of the scanner's inner loops. Valid and the other entry
// points use bestKernel, chosen once when the program starts; the unexported *K functions
// take the kernel explicitly so that tests run every implementation the CPU has.
type kernel uint8

const (
	kernelSWAR kernel = iota // portable Go, eight bytes at a time
	kernelAVX2               // amd64 assembly with AVX2, 32 bytes at a time
)

func (k kernel) String() string {
	if k == kernelAVX2 {
		return "avx2"
	}
	return "swar"
}

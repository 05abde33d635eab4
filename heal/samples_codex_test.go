package heal

// codexSampleCases are the sample cases of samples/codex*/ (see its README).
func codexSampleCases() []sampleCase { return nil }

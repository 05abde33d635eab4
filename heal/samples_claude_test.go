package heal

// claudeSampleCases are the sample cases of samples/claude*/ (see its README).
func claudeSampleCases() []sampleCase { return nil }

package heal

// geminiSampleCases are the sample cases of samples/gemini*/ (see its README).
func geminiSampleCases() []sampleCase { return nil }

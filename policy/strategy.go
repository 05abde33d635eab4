package policy

import "strings"

// strategyFormats lists, for each strategy that only some formats can use, the formats whose
// files it can repair (a preset's format is its name); a strategy not listed repairs a file
// of any format. The strategies are implemented in heal, which asks a format's profiles for
// the ability each of these needs; its TestStrategyFormatsAgreeWithProfiles proves this table
// says what they can do.
var strategyFormats = map[Strategy][]string{
	Reconcile:          {"praisonai", "openviking"},
	RestoreFields:      {"praisonai"},
	DropInvalidEntries: {"openclaw", "copilot-cli"},
	AddOrdinals:        {"codex"},
	RebuildHeader:      {"codex", "gemini-cli", "pi", "copilot-cli"},
	Reindex:            {"openclaw", "opencode"},
	RestoreSnapshot:    {"openclaw", "opencode"},
}

// StrategyFormats returns the formats whose files s can repair, in the order of [Formats],
// or nil when it can repair a file of any format.
func StrategyFormats(s Strategy) []string {
	only, ok := strategyFormats[s]
	if !ok {
		return nil
	}
	var out []string
	for _, f := range Formats {
		if contains(only, f) {
			out = append(out, f)
		}
	}
	return out
}

// Applies reports whether s can repair a file of the format; a rule naming a strategy that
// cannot is an error.
func (s Strategy) Applies(format string) bool {
	only, ok := strategyFormats[s]
	return !ok || contains(only, format)
}

// sentence lists words as "a", "a and b", "a, b and c".
func sentence(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

package main

import (
	"log/slog"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The users whose trees are watched choose their file names, and a name may hold a newline,
// a carriage return, a tab or a terminal escape: printed as it is, it would forge report
// lines (a fake "healthy" row) or drive the operator's terminal. Every text output goes
// through these two functions. JSON output escapes such characters already.

// quoteName is name as it is when it holds only printable characters and valid UTF-8;
// otherwise Go-quoted ("a\nb", "\x1b[31m", "\xff"), which no plain name can look like, since
// a plain name is printed without quotes.
func quoteName(name string) string {
	if !needsEscape(name) && !strings.HasPrefix(name, `"`) {
		return name
	}
	return strconv.Quote(name)
}

// escapeText is free text (a detail, a reason, an error) with each control character and
// each byte that is not UTF-8 written as its Go escape, and nothing else changed.
func escapeText(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i]), 16))
		case isControl(r):
			q := strconv.QuoteRune(r) // '\n', '\x1b', '\u2028'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape: s holds a control character or bytes that are not UTF-8.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || isControl(r) {
			return true
		}
		i += size
	}
	return false
}

// isControl: C0 and C1 controls, DEL, and the Unicode line and paragraph separators.
func isControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == '\u2028' || r == '\u2029'
}

// escapeAttrs is the terminal log handler's ReplaceAttr: string and error values are
// escaped as text, so a name's escape sequence never reaches the terminal. In colour, tint
// turns the text \x1b of a quoted value back into ESC (to keep coloured values), so that
// text, whether escapeText wrote it or the name held it, is written \u001b.
func escapeAttrs(_ []string, a slog.Attr) slog.Attr {
	var s string
	switch a.Value.Kind() {
	case slog.KindString:
		s = a.Value.String()
	case slog.KindAny:
		err, ok := a.Value.Any().(error)
		if !ok {
			return a
		}
		s = err.Error()
	default:
		return a
	}
	if e := strings.ReplaceAll(escapeText(s), `\x1b`, `\u001b`); e != s {
		a.Value = slog.StringValue(e)
	}
	return a
}

package sched

import "strings"

// The state's text is written at every step (logCommand): the two
// rewritings of a command's text it makes, its tokens (replaceTokens) and
// its large integers (coarse), scan the text by hand rather than with a
// regular expression, a tenth of the explorer's processor time before.

// tokenLen is the length of a token the code under test makes: a uuid
// in its text form, 8-4-4-4-12 lowercase hexadecimal digits.
const tokenLen = 36

// isToken reports whether s begins with a token (tokenLen).
func isToken(s string) bool {
	if len(s) < tokenLen {
		return false
	}
	for i := range tokenLen {
		switch c := s[i]; i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// replaceEach returns text with each match of a pattern replaced by
// repl(match), matches found as a regular expression finds them: the
// leftmost first, then the leftmost after its end. next(text, i) is the
// end of the match that begins at i, or -1 for none.
func replaceEach(text string, next func(string, int) int, repl func(string) string) string {
	var b strings.Builder
	from, matched := 0, false
	for i := 0; i < len(text); {
		end := next(text, i)
		if end < 0 {
			i++
			continue
		}
		if !matched {
			b.Grow(len(text))
			matched = true
		}
		b.WriteString(text[from:i])
		b.WriteString(repl(text[i:end]))
		i, from = end, end
	}
	if !matched {
		return text
	}
	b.WriteString(text[from:])
	return b.String()
}

// tokenAt is the end of the token that begins at text[i], or -1.
func tokenAt(text string, i int) int {
	if !isToken(text[i:]) {
		return -1
	}
	return i + tokenLen
}

// isWordByte reports whether c is a word character, as \w of package
// regexp (ASCII letters, digits and '_').
func isWordByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

// minBigDigits is the fewest digits of a large integer (coarse): what
// `\b[0-9]{7,}\b` matches, a word of seven digits or more.
const minBigDigits = 7

// bigNumberAt is the end of the large integer that begins at text[i], or
// -1: a word (a run of word characters not preceded nor followed by
// one) made of minBigDigits digits or more.
func bigNumberAt(text string, i int) int {
	if i > 0 && isWordByte(text[i-1]) {
		return -1
	}
	j := i
	for j < len(text) && '0' <= text[j] && text[j] <= '9' {
		j++
	}
	if j-i < minBigDigits || j < len(text) && isWordByte(text[j]) {
		return -1
	}
	return j
}

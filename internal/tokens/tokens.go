// Package tokens estimates how many tokens a text costs a model, without the
// model's tokenizer. robby uses the estimate to fit a conversation into a
// context window. robbytest uses it to play a server with a context limit.
//
// The estimate follows what byte-pair tokenizers do with each kind of text.
// (Such are OpenAI's o200k_base and cl100k_base, Llama 3's and Qwen's.) A
// common word and the space before it make one token, a long word two or three.
// Digits go in groups of three. Most punctuation marks are a token each, and a
// run of spaces or newlines one. A CJK character is about one. It reads JSON as
// it is encoded, an escape such as \n counting as the character it stands for.
// A message's JSON so costs about its text, plus the few tokens a chat template
// adds around it. The package's tests measure its error on real text, against
// o200k_base and cl100k_base. See testdata/counts.json, and how it was made in
// testdata/count.js.
package tokens

import "unicode/utf8"

// Weights in hundredths of a token.
const (
	perWord       = 100 // a word of up to wordLen letters, with its leading space
	wordLen       = 6
	perLetter     = 25 // each letter past wordLen
	perDigits     = 100
	digitGroup    = 3
	perPunct      = 70 // a punctuation mark
	perPunctAfter = 40 // each mark that follows it
	perSpaceRun   = 100
	perCJK        = 110
	perOther      = 40 // a letter of another script: Cyrillic, Greek, accented Latin
)

// Count estimates the tokens of b, text or JSON.
func Count(b []byte) int {
	units := 0
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case isLetter(c):
			j := i + 1
			for j < len(b) && isLetter(b[j]) {
				j++
			}
			units += perWord + max(0, j-i-wordLen)*perLetter
			i = j
		case isDigit(c):
			j := i + 1
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			units += (j - i + digitGroup - 1) / digitGroup * perDigits
			i = j
		case c == ' ' && i+1 < len(b) && isLetter(b[i+1]):
			i++ // the word takes its space
		case isSpace(c) || c == '\\' && i+1 < len(b) && isSpaceEscape(b[i+1]):
			j := i
			for j < len(b) {
				if isSpace(b[j]) {
					j++
				} else if b[j] == '\\' && j+1 < len(b) && isSpaceEscape(b[j+1]) {
					j += 2
				} else {
					break
				}
			}
			units += perSpaceRun
			i = j
		case c == '\\' && i+5 < len(b) && b[i+1] == 'u':
			units += perPunct // \u0026 and the like: one character
			i += 6
		case c == '\\' && i+1 < len(b):
			units += perPunct // \" or \\: one character
			i += 2
		case c < utf8.RuneSelf:
			// Tokenizers merge common runs of marks: ":", "},{", ");".
			units += perPunct
			for i++; i < len(b) && isPunct(b[i]); i++ {
				units += perPunctAfter
			}
		default:
			r, n := utf8.DecodeRune(b[i:])
			if isCJK(r) {
				units += perCJK
			} else {
				units += perOther
			}
			i += n
		}
	}
	return (units + 99) / 100
}

// String is [Count] of a string.
func String(s string) int {
	// The conversion does not allocate: the compiler sees b does not escape.
	return Count([]byte(s))
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isSpace(c byte) bool  { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }
func isPunct(c byte) bool {
	return c > ' ' && c < utf8.RuneSelf && c != '\\' && !isLetter(c) && !isDigit(c)
}

// isSpaceEscape reports whether \c is a JSON escape of white space.
func isSpaceEscape(c byte) bool { return c == 'n' || c == 't' || c == 'r' }

// isCJK reports whether r is a Chinese, Japanese or Korean character or
// punctuation mark. Tokenizers count those about one a token.
func isCJK(r rune) bool {
	return r >= 0x2E80 && r <= 0x9FFF || // radicals, punctuation, kana, CJK ideographs
		r >= 0xAC00 && r <= 0xD7AF || // Hangul
		r >= 0xF900 && r <= 0xFAFF || // compatibility ideographs
		r >= 0xFF00 && r <= 0xFFEF || // full-width forms
		r >= 0x20000 && r <= 0x3FFFF
}

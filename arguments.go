package robby

import (
	"errors"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A tool call's arguments arrive in fragments, each a JSON string of the
// provider's chunk. Two things make joining them delicate:
//
//   - Their size is the model's to choose (a model writing a file through a
//     tool sends megabytes, OpenAI in fragments of about 4 bytes), so every
//     fragment must cost time in proportion to its own length: whether the
//     arguments so far are a whole JSON value is tracked as bytes arrive,
//     never by reading them all again.
//   - Some servers cut the arguments on byte boundaries, inside a character,
//     or between the two halves of an escaped surrogate pair. So fragments
//     are decoded to raw bytes, keeping invalid UTF-8 and lone surrogates
//     as they came, and joined; only the whole is made valid UTF-8.

// argBuffer holds the arguments of one call as its fragments arrive.
type argBuffer struct {
	buf  []byte
	scan jsonScanner
}

// write appends a fragment.
func (a *argBuffer) write(p string) {
	a.buf = append(a.buf, p...)
	a.scan.feed(p)
}

// reset replaces the arguments so far by p.
func (a *argBuffer) reset(p string) {
	a.buf = append(a.buf[:0], p...)
	a.scan = jsonScanner{}
	a.scan.feed(p)
}

// equals reports whether the arguments so far are exactly p.
func (a *argBuffer) equals(p string) bool { return string(a.buf) == p }

// hasPrefixOf reports whether p begins with the arguments so far.
func (a *argBuffer) hasPrefixOf(p string) bool { return strings.HasPrefix(p, string(a.buf)) }

// complete reports whether the arguments so far are one whole JSON value,
// as json.Valid would say.
func (a *argBuffer) complete() bool { return a.scan.complete() }

// text returns the arguments as valid UTF-8: surrogate halves that met are
// joined, what is still invalid becomes U+FFFD, as a JSON decoder reads it.
func (a *argBuffer) text() string { return wellFormed(a.buf) }

// jsonScanner tells whether the bytes fed to it so far are one JSON value
// (with white space around it), reading each byte once. It accepts what
// encoding/json's Valid accepts: bytes inside strings are not checked for
// UTF-8, control characters are refused.
type jsonScanner struct {
	state  scanState
	stack  []byte // '{' or '[' for each open container
	isKey  bool   // the string being read is an object key
	hex    int    // hex digits left in a \u escape
	lit    string // bytes left in true, false or null
	broken bool   // no continuation can make the bytes valid
}

type scanState uint8

const (
	scanValue       scanState = iota // a value is expected (the start)
	scanArrayFirst                   // after '[': a value or ']'
	scanObjectFirst                  // after '{': a key or '}'
	scanKey                          // after ',' in an object: a key
	scanColon                        // after a key
	scanString                       // inside a string
	scanEscape                       // after a backslash in a string
	scanHex                          // inside a \u escape
	scanLiteral                      // inside true, false or null
	scanMinus                        // after a leading '-'
	scanZero                         // an integer part of 0
	scanInt                          // in the integer part
	scanDot                          // after the decimal point
	scanFraction                     // in the fraction
	scanE                            // after e or E
	scanESign                        // after the exponent's sign
	scanExponent                     // in the exponent
	scanAfterValue                   // after a value inside a container
	scanEnd                          // after the top-level value
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// feed reads more bytes.
func (s *jsonScanner) feed(p string) {
	for i := 0; i < len(p) && !s.broken; i++ {
		s.step(p[i])
	}
}

// complete reports whether the bytes so far are one whole JSON value.
func (s *jsonScanner) complete() bool {
	if s.broken {
		return false
	}
	switch s.state {
	case scanEnd:
		return true
	case scanZero, scanInt, scanFraction, scanExponent:
		return len(s.stack) == 0 // a top-level number may end here
	}
	return false
}

func (s *jsonScanner) step(c byte) {
	switch s.state {
	case scanValue, scanArrayFirst:
		if isSpace(c) {
			return
		}
		if c == ']' && s.state == scanArrayFirst {
			s.close('[')
			return
		}
		s.startValue(c)
	case scanObjectFirst, scanKey:
		switch {
		case isSpace(c):
		case c == '}' && s.state == scanObjectFirst:
			s.close('{')
		case c == '"':
			s.state, s.isKey = scanString, true
		default:
			s.broken = true
		}
	case scanColon:
		switch {
		case isSpace(c):
		case c == ':':
			s.state = scanValue
		default:
			s.broken = true
		}
	case scanString:
		switch {
		case c == '"':
			if s.isKey {
				s.state, s.isKey = scanColon, false
			} else {
				s.endValue()
			}
		case c == '\\':
			s.state = scanEscape
		case c < 0x20:
			s.broken = true
		}
	case scanEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.state = scanString
		case 'u':
			s.state, s.hex = scanHex, 4
		default:
			s.broken = true
		}
	case scanHex:
		if !isHex(c) {
			s.broken = true
			return
		}
		if s.hex--; s.hex == 0 {
			s.state = scanString
		}
	case scanLiteral:
		if c != s.lit[0] {
			s.broken = true
			return
		}
		if s.lit = s.lit[1:]; s.lit == "" {
			s.endValue()
		}
	case scanMinus:
		switch {
		case c == '0':
			s.state = scanZero
		case '1' <= c && c <= '9':
			s.state = scanInt
		default:
			s.broken = true
		}
	case scanZero, scanInt:
		switch {
		case s.state == scanInt && '0' <= c && c <= '9':
		case c == '.':
			s.state = scanDot
		case c == 'e' || c == 'E':
			s.state = scanE
		default:
			s.endValue()
			s.step(c)
		}
	case scanDot, scanFraction:
		switch {
		case '0' <= c && c <= '9':
			s.state = scanFraction
		case s.state == scanFraction && (c == 'e' || c == 'E'):
			s.state = scanE
		case s.state == scanFraction:
			s.endValue()
			s.step(c)
		default:
			s.broken = true
		}
	case scanE, scanESign:
		switch {
		case '0' <= c && c <= '9':
			s.state = scanExponent
		case s.state == scanE && (c == '+' || c == '-'):
			s.state = scanESign
		default:
			s.broken = true
		}
	case scanExponent:
		if c < '0' || c > '9' {
			s.endValue()
			s.step(c)
		}
	case scanAfterValue:
		top := s.stack[len(s.stack)-1]
		switch {
		case isSpace(c):
		case c == ',' && top == '{':
			s.state = scanKey
		case c == ',':
			s.state = scanValue
		case c == '}' && top == '{', c == ']' && top == '[':
			s.close(top)
		default:
			s.broken = true
		}
	case scanEnd:
		if !isSpace(c) {
			s.broken = true
		}
	}
}

// startValue reads the first byte of a value.
func (s *jsonScanner) startValue(c byte) {
	switch {
	case c == '{' || c == '[':
		s.stack = append(s.stack, c)
		s.state = scanObjectFirst
		if c == '[' {
			s.state = scanArrayFirst
		}
	case c == '"':
		s.state = scanString
	case c == '-':
		s.state = scanMinus
	case c == '0':
		s.state = scanZero
	case '1' <= c && c <= '9':
		s.state = scanInt
	case c == 't':
		s.state, s.lit = scanLiteral, "rue"
	case c == 'f':
		s.state, s.lit = scanLiteral, "alse"
	case c == 'n':
		s.state, s.lit = scanLiteral, "ull"
	default:
		s.broken = true
	}
}

// close ends the innermost container, opened by open.
func (s *jsonScanner) close(open byte) {
	if len(s.stack) == 0 || s.stack[len(s.stack)-1] != open {
		s.broken = true
		return
	}
	s.stack = s.stack[:len(s.stack)-1]
	s.endValue()
}

// endValue moves past a value that ended.
func (s *jsonScanner) endValue() {
	if len(s.stack) == 0 {
		s.state = scanEnd
	} else {
		s.state = scanAfterValue
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

var errNotString = errors.New("not a JSON string")

// unquoteBytes decodes a JSON string literal to the bytes it stands for,
// keeping what a strict decoder would replace by U+FFFD: invalid UTF-8 as
// it came, and a surrogate escaped without its other half as the three
// bytes of its code point (WTF-8), so that [wellFormed] can join it with
// the half in the next fragment.
func unquoteBytes(lit []byte) (string, error) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", errNotString
	}
	in := lit[1 : len(lit)-1]
	i := 0
	for i < len(in) && in[i] != '\\' {
		i++
	}
	if i == len(in) {
		return string(in), nil
	}
	out := make([]byte, 0, len(in))
	for len(in) > 0 {
		i := 0
		for i < len(in) && in[i] != '\\' {
			i++
		}
		out = append(out, in[:i]...)
		in = in[i:]
		if len(in) == 0 {
			break
		}
		if len(in) < 2 {
			return "", errNotString
		}
		switch e := in[1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(in[2:])
			if !ok {
				return "", errNotString
			}
			in = in[4:]
			if utf16.IsSurrogate(r) {
				if r2, ok := escapedRune(in[2:]); ok {
					if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
						out = utf8.AppendRune(out, pair)
						in = in[6:]
						break
					}
				}
				out = append(out, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
				break
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", errNotString
		}
		in = in[2:]
	}
	return string(out), nil
}

// escapedRune reads a \uXXXX escape at the start of b.
func escapedRune(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	return hex4(b[2:])
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// wellFormed returns b as valid UTF-8: a high surrogate followed by a low
// one, each in the three bytes [unquoteBytes] keeps them in, becomes the
// character they make; any other invalid byte becomes U+FFFD.
func wellFormed(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var out strings.Builder
	out.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			out.Write(b[i : i+n])
			i += n
			continue
		}
		if hi, ok := surrogateAt(b[i:]); ok {
			if lo, ok := surrogateAt(b[i+3:]); ok {
				if pair := utf16.DecodeRune(hi, lo); pair != utf8.RuneError {
					out.WriteRune(pair)
					i += 6
					continue
				}
			}
			out.WriteRune(utf8.RuneError)
			i += 3
			continue
		}
		out.WriteRune(utf8.RuneError)
		i++
	}
	return out.String()
}

// surrogateAt reads a surrogate code point encoded as UTF-8 would encode
// any other three-byte code point.
func surrogateAt(b []byte) (rune, bool) {
	if len(b) < 3 || b[0] != 0xED || b[1]&0xE0 != 0xA0 || b[2]&0xC0 != 0x80 {
		return 0, false
	}
	return 0xD000 | rune(b[1]&0x3F)<<6 | rune(b[2]&0x3F), true
}

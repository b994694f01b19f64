package jsonstream

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

// Args holds the arguments of one call as its fragments arrive.
type Args struct {
	buf  []byte
	scan Scanner
}

// Write appends a fragment.
func (a *Args) Write(p string) {
	a.buf = append(a.buf, p...)
	a.scan.Feed(p)
}

// Reset replaces the arguments so far by p.
func (a *Args) Reset(p string) {
	a.buf = append(a.buf[:0], p...)
	a.scan = Scanner{}
	a.scan.Feed(p)
}

// Equals reports whether the arguments so far are exactly p.
func (a *Args) Equals(p string) bool { return string(a.buf) == p }

// Len is the length of the arguments so far, in bytes.
func (a *Args) Len() int { return len(a.buf) }

// Bytes returns the arguments so far as they came. The caller must not
// modify them.
func (a *Args) Bytes() []byte { return a.buf }

// HasPrefixOf reports whether p begins with the arguments so far.
func (a *Args) HasPrefixOf(p string) bool { return strings.HasPrefix(p, string(a.buf)) }

// Complete reports whether the arguments so far are one whole JSON value,
// as json.Valid would say.
func (a *Args) Complete() bool { return a.scan.Complete() }

// Text returns the arguments as valid UTF-8. Surrogate halves that met are
// joined. What is still invalid becomes U+FFFD, as a JSON decoder reads it.
func (a *Args) Text() string { return WellFormed(a.buf) }

var errNotString = errors.New("not a JSON string")

// Unquote decodes a JSON string literal to the bytes it stands for. It keeps
// what a strict decoder would replace by U+FFFD. Invalid UTF-8 stays as it
// came. A surrogate escaped without its other half becomes the three bytes of
// its code point (WTF-8). [WellFormed] can then join it with the half in the
// next fragment.
func Unquote(lit []byte) (string, error) {
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

// WellFormed returns b as valid UTF-8. A high surrogate followed by a low one,
// each in the three bytes [Unquote] keeps them in, becomes the character they
// make. Any other invalid byte becomes U+FFFD.
func WellFormed(b []byte) string {
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

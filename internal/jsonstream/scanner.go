package jsonstream

// A Scanner reads JSON one byte at a time. It accepts what encoding/json's
// Valid accepts. Bytes inside strings are not checked for UTF-8, and control
// characters are refused. It also tells where each value ends, so a prefix can
// be closed into valid JSON (see [Partial]).
type Scanner struct {
	state  scanState
	stack  []byte // '{' or '[' for each open container
	isKey  bool   // the string being read is an object key
	hex    int    // hex digits left in a \u escape
	lit    string // bytes left in true, false or null
	broken bool   // no continuation can make the bytes valid
	ended  ends   // the values the last byte ended
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

// ends says which values the last byte ended. A number ends on the byte after
// it, which may end a container too.
type ends uint8

const (
	endedBefore ends = 1 << iota // a value ended just before the byte
	endedWith                    // a value ended with the byte
)

// Feed reads more bytes.
func (s *Scanner) Feed(p string) {
	for i := 0; i < len(p) && !s.broken; i++ {
		s.Step(p[i])
	}
}

// Step reads one byte.
func (s *Scanner) Step(c byte) {
	s.ended = 0
	s.step(c)
}

// Complete reports whether the bytes so far are one whole JSON value.
func (s *Scanner) Complete() bool {
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

// Broken reports whether no continuation can make the bytes valid.
func (s *Scanner) Broken() bool { return s.broken }

// Done reports whether the top-level value has ended.
func (s *Scanner) Done() bool { return s.state == scanEnd && !s.broken }

// Depth is how many containers are open.
func (s *Scanner) Depth() int { return len(s.stack) }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *Scanner) step(c byte) {
	switch s.state {
	case scanValue, scanArrayFirst:
		s.stepValue(c)
	case scanObjectFirst, scanKey, scanColon, scanAfterValue, scanEnd:
		s.stepPunctuation(c)
	case scanString, scanEscape, scanHex:
		s.stepString(c)
	case scanLiteral:
		if c != s.lit[0] {
			s.broken = true
			return
		}
		if s.lit = s.lit[1:]; s.lit == "" {
			s.endValue(endedWith)
		}
	default:
		s.stepNumber(c)
	}
}

// stepValue reads a byte where a value may start.
func (s *Scanner) stepValue(c byte) {
	switch {
	case isSpace(c):
	case c == ']' && s.state == scanArrayFirst:
		s.close('[')
	default:
		s.startValue(c)
	}
}

// stepPunctuation reads a byte between values and keys.
func (s *Scanner) stepPunctuation(c byte) {
	if isSpace(c) {
		return
	}
	switch s.state {
	case scanObjectFirst, scanKey:
		switch {
		case c == '}' && s.state == scanObjectFirst:
			s.close('{')
		case c == '"':
			s.state, s.isKey = scanString, true
		default:
			s.broken = true
		}
	case scanColon:
		if c != ':' {
			s.broken = true
			return
		}
		s.state = scanValue
	case scanAfterValue:
		top := s.stack[len(s.stack)-1]
		switch {
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
		s.broken = true
	}
}

// stepString reads a byte of a string.
func (s *Scanner) stepString(c byte) {
	switch s.state {
	case scanString:
		switch {
		case c == '"' && s.isKey:
			s.state, s.isKey = scanColon, false
		case c == '"':
			s.endValue(endedWith)
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
	}
}

// stepNumber reads a byte of a number, or the byte after one.
func (s *Scanner) stepNumber(c byte) {
	digit := '0' <= c && c <= '9'
	switch s.state {
	case scanMinus:
		switch {
		case c == '0':
			s.state = scanZero
		case digit:
			s.state = scanInt
		default:
			s.broken = true
		}
		return
	case scanZero, scanInt:
		switch {
		case s.state == scanInt && digit:
			return
		case c == '.':
			s.state = scanDot
			return
		case c == 'e' || c == 'E':
			s.state = scanE
			return
		}
	case scanDot, scanFraction:
		switch {
		case digit:
			s.state = scanFraction
			return
		case s.state == scanFraction && (c == 'e' || c == 'E'):
			s.state = scanE
			return
		case s.state == scanDot:
			s.broken = true
			return
		}
	case scanE, scanESign:
		switch {
		case digit:
			s.state = scanExponent
		case s.state == scanE && (c == '+' || c == '-'):
			s.state = scanESign
		default:
			s.broken = true
		}
		return
	case scanExponent:
		if digit {
			return
		}
	}
	// The number ended before c: read c after it.
	s.endValue(endedBefore)
	s.step(c)
}

// startValue reads the first byte of a value.
func (s *Scanner) startValue(c byte) {
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
func (s *Scanner) close(open byte) {
	if len(s.stack) == 0 || s.stack[len(s.stack)-1] != open {
		s.broken = true
		return
	}
	s.stack = s.stack[:len(s.stack)-1]
	s.endValue(endedWith)
}

// endValue moves past a value that ended.
func (s *Scanner) endValue(e ends) {
	s.ended |= e
	if len(s.stack) == 0 {
		s.state = scanEnd
	} else {
		s.state = scanAfterValue
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

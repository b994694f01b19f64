package jsonstream

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// scannerAgrees feeds data to a Scanner cut at the given offsets and
// checks at every cut that it says what json.Valid says of the prefix.
func scannerAgrees(t *testing.T, data []byte, cuts []byte) {
	t.Helper()
	var s Scanner
	at := 0
	check := func(end int) {
		s.Feed(string(data[at:end]))
		at = end
		require.Equal(t, json.Valid(data[:end]), s.Complete(), "after %q", data[:end])
	}
	for _, c := range cuts {
		if end := at + int(c)%8; end <= len(data) {
			check(end)
		}
	}
	check(len(data))
}

func TestJSONScannerAgreesWithValid(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{}`, ` { } `, `[]`, `[1,2]`, `[1,]`, `{"a":1}`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{1:2}`,
		`"x"`, `"\u00e9\ud83c\udf0d"`, `"\x"`, `"\u12g4"`, "\"a\x01\"", "\"\xff\xfe\"", `true`, `tru`, `truex`,
		`null`, `false `, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e`, `1e+`, `1E-5`, `-12.5e10`, `1 2`, `{}{}`, `{}}`,
		`[{"a":[1,{"b":null}]},"c",true,false,-1.0e-2]`, `{"a":"}"}`, `{"a":"\"}"}`, `[[[[[]]]]]`, `[[[[]]]`,
		`{"text":"See you \\ud83d\\ude00"}`, "{\n\t\"a\" :\r 1 }",
	} {
		scannerAgrees(t, []byte(in), nil)
		scannerAgrees(t, []byte(in), []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	}
}

// FuzzJSONScanner checks that the incremental scanner behind the assembler
// says what json.Valid says, at every cut of any bytes.
func FuzzJSONScanner(f *testing.F) {
	f.Add([]byte(`{"city":"Paris","days":[1,2.5e3,-0],"ok":true,"x":null}`), []byte{3, 1, 4, 1, 5})
	f.Add([]byte(`"\ud83c\udf0d"`), []byte{2, 6})
	f.Fuzz(func(t *testing.T, data, cuts []byte) { scannerAgrees(t, data, cuts) })
}

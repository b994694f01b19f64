package robby

import (
	"reflect"
	"testing"

	"github.com/robby-go/robby/internal/schemas"
)

// BenchmarkAnswerCheck is the check of a typed answer alone: validated
// against its schema and decoded strictly, the part of a typed run that a
// text run does not do.
func BenchmarkAnswerCheck(b *testing.B) {
	raw := []byte(`{"name": "Paris", "country": "France", "population": 2102650, "landmarks": ["Eiffel Tower", "Louvre", "Notre-Dame"]}`)
	as := schemas.AnswerFor(reflect.TypeFor[city]())
	b.ReportAllocs()
	for b.Loop() {
		var c city
		if failures := as.Check(raw, &c); failures != nil || c.Population != 2102650 {
			b.Fatal(failures)
		}
	}
}

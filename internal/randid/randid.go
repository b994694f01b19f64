// Package randid makes the random IDs that robby and its endpoint hand out.
// They are tool-call IDs, and completion, response and request IDs.
package randid

import "math/rand/v2"

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// Alnum returns n random letters and digits: IDs, not secrets.
func Alnum(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

//go:build race

package openaiserver_test

// raceAllocFactor is how much more a binary built with -race allocates than
// the endpoint itself: the race detector's sync.Pool drops a quarter of
// what it is given, and checkptr adds its own. Measured on the bodies of
// memory_test.go: ×1.17 to ×1.42 (tiny input messages, 33.5 bytes per body
// byte, become 39.6, a hair under the bound of 40).
const raceAllocFactor = 1.5

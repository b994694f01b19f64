//go:build !race

package openaiserver_test

// raceAllocFactor is 1 without the race detector: see race_test.go.
const raceAllocFactor = 1

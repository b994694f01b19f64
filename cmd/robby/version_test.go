package main

import (
	"bytes"
	"io"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVersion: robby version prints the module's version, the Go version
// and the commit, as the build recorded them.
func TestVersion(t *testing.T) {
	var stdout bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"version"}, nil, &stdout, io.Discard))
	assert.Regexp(t, `^robby \S+\n  go       `+runtime.Version()+`\n  commit   `, stdout.String())

	bi := &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/robby-go/robby/cmd/robby", Version: "v1.4.0"},
		Deps: []*debug.Module{{Path: "github.com/robby-go/robby", Version: "v1.4.0"}},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.time", Value: "2026-11-28T08:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	stdout.Reset()
	printVersion(&stdout, bi)
	assert.Equal(t, "robby v1.4.0\n  go       go1.26.1\n  commit   0123456789abcdef 2026-11-28T08:00:00Z modified\n"+
		"  library  github.com/robby-go/robby v1.4.0\n", stdout.String())

	stdout.Reset()
	printVersion(&stdout, &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}})
	assert.Contains(t, stdout.String(), "robby (devel)\n")
	assert.Contains(t, stdout.String(), "commit   unknown")
}

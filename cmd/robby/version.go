package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
)

var versionCommand = commandSpec{
	name: "version", synopsis: "robby version",
	summary: "print robby's version, the Go version that built it and its commit",
	about: "Prints the version of robby's module, the Go version that built the binary, the commit it was built\n" +
		"from (with the commit's time, and \"modified\" when the tree had changes) and the version of the library,\n" +
		"as the binary records them. go install …/cmd/robby@VERSION records a version; go build in a checkout, the commit.",
	setup: setupVersion,
}

func setupVersion(c *command) func(context.Context) error {
	return func(context.Context) error {
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			return errors.New("this binary records no build information: build it with go build or go install")
		}
		printVersion(c.stdout, bi)
		return nil
	}
}

// printVersion prints what bi says of robby's build.
func printVersion(w io.Writer, bi *debug.BuildInfo) {
	fmt.Fprintf(w, "robby %s\n", orDevel(bi.Main.Version))
	fmt.Fprintf(w, "  go       %s\n", bi.GoVersion)
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	commit := vcs["vcs.revision"]
	if commit == "" {
		commit = "unknown (not recorded: go run and go test leave it out; go build in a git checkout records it)"
	}
	if t := vcs["vcs.time"]; t != "" {
		commit += " " + t
	}
	if vcs["vcs.modified"] == "true" {
		commit += " modified"
	}
	fmt.Fprintf(w, "  commit   %s\n", commit)
	for _, m := range bi.Deps {
		if m.Path == "github.com/robby-go/robby" {
			fmt.Fprintf(w, "  library  %s %s\n", m.Path, orDevel(m.Version))
		}
	}
}

// orDevel is a module's version, or "(devel)" when it has none.
func orDevel(v string) string {
	if v == "" || v == "v0.0.0" {
		return "(devel)"
	}
	return v
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/skills"
)

// loadSkills reads the skills of -skills, through an os.Root kept open
// until close, so that no link leads out of the folder. A skill that cannot
// be read is named on stderr; the others load. It returns the system prompt
// with the skills listed, and their tools.
func (f *agentFlags) loadSkills(stderr io.Writer) (string, []robby.Tool, error) {
	if f.skills == "" {
		return f.system, nil, nil
	}
	root, err := os.OpenRoot(f.skills)
	if err != nil {
		return "", nil, fmt.Errorf("-skills: %w", err)
	}
	set, err := skills.Load(root.FS())
	if set == nil {
		root.Close()
		return "", nil, fmt.Errorf("-skills: %w", err)
	}
	f.skillsRoot = root
	var skipped *skills.SkillError
	for _, e := range unjoin(err) {
		if errors.As(e, &skipped) {
			fmt.Fprintf(stderr, "robby: skill skipped: %s\n", strings.TrimPrefix(e.Error(), "skills: "))
		}
	}
	system := strings.TrimSpace(f.system + "\n\n" + set.Prompt())
	return system, set.Tools(), nil
}

// unjoin returns the errors errors.Join joined, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}
